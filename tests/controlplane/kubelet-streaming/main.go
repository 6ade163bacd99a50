// kubelet-streaming: the front of devcluster's node agent on the Node's kubelet port. It serves
// the kubelet API's /portForward/{namespace}/{pod}[/{uid}] with Kubernetes' own streaming server
// (k8s.io/cri-streaming: SPDY/3.1, protocol portforward.k8s.io, as kube-apiserver speaks it to a
// kubelet), forwarding each stream to the Pod's address from this machine, and passes every other
// request (container logs, followed ones streamed as they come) to the node agent's own HTTPS
// server, which also tells it each Pod's address.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// The kubelet's defaults: --streaming-connection-idle-timeout and its stream creation timeout.
const (
	idleTimeout           = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

// podAddress is what the node agent answers for GET /devcluster/podAddress/{namespace}/{pod}.
type podAddress struct {
	UID string `json:"uid"`
	IP  string `json:"ip"`
}

// forwarder connects each forwarded stream to one Pod's address.
type forwarder struct {
	pod podAddress
}

// PortForward copies between the stream and a connection to the Pod's port until the Pod's side
// ends; the client's end of stream is passed on as a half-close.
func (f forwarder) PortForward(ctx context.Context, name string, uid string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var dialer net.Dialer
	address := net.JoinHostPort(f.pod.IP, strconv.Itoa(int(port)))
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("pod %s: port %d: %w", name, port, err)
	}
	defer conn.Close()
	go func() {
		io.Copy(conn, stream)
		if tcp, ok := conn.(*net.TCPConn); ok {
			tcp.CloseWrite()
		}
	}()
	if _, err := io.Copy(stream, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("pod %s: port %d: %w", name, port, err)
	}
	return nil
}

type server struct {
	backend *url.URL
	client  *http.Client
	proxy   *httputil.ReverseProxy
}

// lookup asks the node agent for a Pod's uid and address; nil when it runs no such Pod.
func (s *server) lookup(ctx context.Context, namespace, pod string) (*podAddress, error) {
	target := s.backend.JoinPath("devcluster", "podAddress", namespace, pod)
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, err
	}
	response, err := s.client.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	if response.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if response.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(response.Body, 1024))
		return nil, fmt.Errorf("node agent: GET %s: %s: %s", target.Path, response.Status, body)
	}
	var address podAddress
	if err := json.NewDecoder(response.Body).Decode(&address); err != nil {
		return nil, fmt.Errorf("node agent: GET %s: %w", target.Path, err)
	}
	return &address, nil
}

// servePortForward answers /portForward/{namespace}/{pod}[/{uid}] as the kubelet does.
func (s *server) servePortForward(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/portForward/"), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		http.NotFound(w, r)
		return
	}
	options, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, err := s.lookup(r.Context(), parts[0], parts[1])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pod == nil || (len(parts) == 3 && parts[2] != "" && parts[2] != pod.UID) {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	if pod.IP == "" {
		http.Error(w, "pod "+parts[0]+"/"+parts[1]+" has no address yet", http.StatusServiceUnavailable)
		return
	}
	portforward.ServePortForward(w, r, forwarder{pod: *pod}, parts[0]+"/"+parts[1], pod.UID, options,
		idleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve the kubelet API on")
	portFile := flag.String("port-file", "", "file to write the port served on once listening")
	backend := flag.String("backend", "", "the node agent's HTTPS server (https://127.0.0.1:PORT)")
	certFile := flag.String("tls-cert-file", "", "serving certificate (PEM)")
	keyFile := flag.String("tls-private-key-file", "", "serving key (PEM)")
	flag.Parse()
	if *backend == "" || *certFile == "" || *keyFile == "" {
		log.Fatal("kubelet-streaming: --backend, --tls-cert-file and --tls-private-key-file are required")
	}
	backendURL, err := url.Parse(*backend)
	if err != nil || backendURL.Scheme != "https" || backendURL.Host == "" {
		log.Fatalf("kubelet-streaming: --backend %q: want https://HOST:PORT", *backend)
	}
	certificate, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("kubelet-streaming: %v", err)
	}

	// The node agent's server on loopback has a throwaway certificate of its own.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	s := &server{backend: backendURL, client: &http.Client{Transport: transport, Timeout: 10 * time.Second}}
	s.proxy = httputil.NewSingleHostReverseProxy(backendURL)
	s.proxy.Transport = transport
	s.proxy.FlushInterval = -1 // a followed log reaches the client as it is written

	mux := http.NewServeMux()
	mux.HandleFunc("/portForward/", s.servePortForward)
	mux.Handle("/", s.proxy)

	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("kubelet-streaming: %v", err)
	}
	if *portFile != "" {
		port := strconv.Itoa(listener.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(*portFile+".tmp", []byte(port+"\n"), 0o600); err != nil {
			log.Fatalf("kubelet-streaming: %v", err)
		}
		if err := os.Rename(*portFile+".tmp", *portFile); err != nil {
			log.Fatalf("kubelet-streaming: %v", err)
		}
	}
	httpServer := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{certificate}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		// HTTP/1.1 only, as the kubelet's streaming server: SPDY and WebSockets upgrade from it.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		<-signals
		httpServer.Close()
	}()
	if err := httpServer.ServeTLS(listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("kubelet-streaming: %v", err)
	}
}
