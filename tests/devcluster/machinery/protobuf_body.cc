// Kubernetes protobuf request bodies to JSON. Each message has a table of its published field
// numbers (k8s.io/api and k8s.io/apimachinery generated.proto, as of Kubernetes 1.32) with the JSON
// name and Go JSON behaviour of each field; libprotobuf's CodedInputStream reads the wire format.
#include "tests/devcluster/machinery/protobuf_body.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <openssl/evp.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using google::protobuf::internal::WireFormatLite;

// What a field holds on the wire, and so how its JSON value is made.
enum class Kind : std::uint8_t {
  kString,       // string (UTF-8 checked)
  kBool,         // varint
  kInt32,        // varint within int32
  kInt64,        // varint
  kMessage,      // a nested message with its own table
  kTime,         // metav1.Time {seconds, nanos}: RFC 3339 to the second, null when zero
  kMicroTime,    // metav1.MicroTime: RFC 3339 with microseconds, null when zero
  kQuantity,     // resource.Quantity {string}: the quantity's string
  kIntOrString,  // intstr.IntOrString {type, intVal, strVal}: a number or a string
  kRawJson,      // metav1.FieldsV1 {Raw}: the JSON document it holds
  kStringMap,    // map<string, string>
  kBytesMap,     // map<string, bytes>: values as base64
  kQuantityMap,  // map<string, Quantity> (a ResourceList)
  kNotDecoded,   // a real field devcluster has no table for: refused by name
};

// How the Go field's JSON tag treats it (encoding/json without omitzero).
enum class Presence : std::uint8_t {
  kOmitEmpty,  // a value with omitempty: left out when zero or empty
  kPointer,    // a pointer with omitempty: written whenever the wire has it, zero included
  kAlways,     // a value without omitempty, or any struct: always written, its zero when absent
  kNullable,   // a pointer without omitempty: null when absent
  kInline,     // an embedded struct (json:",inline"): its fields join the parent's
};
using enum Presence;

struct MessageSpec;

struct FieldSpec {
  int number;
  std::string_view json;
  Kind kind;
  bool repeated;
  Presence presence;
  const MessageSpec* message;
};

struct MessageSpec {
  std::string_view name;  // the protobuf message's full name, for error messages
  std::vector<FieldSpec> fields;
};

FieldSpec String(int number, std::string_view json, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kString, false, presence, nullptr};
}
FieldSpec Strings(int number, std::string_view json, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kString, true, presence, nullptr};
}
FieldSpec Bool(int number, std::string_view json, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kBool, false, presence, nullptr};
}
FieldSpec Int32(int number, std::string_view json, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kInt32, false, presence, nullptr};
}
FieldSpec Int64(int number, std::string_view json, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kInt64, false, presence, nullptr};
}
FieldSpec Int64s(int number, std::string_view json) { return {number, json, Kind::kInt64, true, kOmitEmpty, nullptr}; }
FieldSpec Message(int number, std::string_view json, const MessageSpec& message, Presence presence) {
  return {number, json, Kind::kMessage, false, presence, &message};
}
FieldSpec Messages(int number, std::string_view json, const MessageSpec& message, Presence presence = kOmitEmpty) {
  return {number, json, Kind::kMessage, true, presence, &message};
}
FieldSpec Timestamp(int number, std::string_view json, Presence presence = kAlways) {
  return {number, json, Kind::kTime, false, presence, nullptr};
}
FieldSpec MicroTimestamp(int number, std::string_view json, Presence presence = kAlways) {
  return {number, json, Kind::kMicroTime, false, presence, nullptr};
}
FieldSpec Quantity(int number, std::string_view json, Presence presence) {
  return {number, json, Kind::kQuantity, false, presence, nullptr};
}
FieldSpec IntOrString(int number, std::string_view json, Presence presence) {
  return {number, json, Kind::kIntOrString, false, presence, nullptr};
}
FieldSpec RawJson(int number, std::string_view json) {
  return {number, json, Kind::kRawJson, false, kPointer, nullptr};
}
FieldSpec StringMap(int number, std::string_view json) {
  return {number, json, Kind::kStringMap, false, kOmitEmpty, nullptr};
}
FieldSpec BytesMap(int number, std::string_view json) {
  return {number, json, Kind::kBytesMap, false, kOmitEmpty, nullptr};
}
FieldSpec QuantityMap(int number, std::string_view json) {
  return {number, json, Kind::kQuantityMap, false, kOmitEmpty, nullptr};
}
FieldSpec NotDecoded(int number, std::string_view json) {
  return {number, json, Kind::kNotDecoded, false, kOmitEmpty, nullptr};
}

// ---- The helper messages the special kinds are read with.
const MessageSpec kTimestamp{"k8s.io.apimachinery.pkg.apis.meta.v1.Time",
                             {Int64(1, "seconds", kAlways), Int32(2, "nanos", kAlways)}};
const MessageSpec kQuantity{"k8s.io.apimachinery.pkg.api.resource.Quantity", {String(1, "string", kAlways)}};
const MessageSpec kIntOrString{"k8s.io.apimachinery.pkg.util.intstr.IntOrString",
                               {Int64(1, "type", kAlways), Int32(2, "intVal", kAlways), String(3, "strVal", kAlways)}};
const MessageSpec kFieldsV1{"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", {String(1, "Raw", kAlways)}};
const MessageSpec kTypeMeta{"k8s.io.apimachinery.pkg.runtime.TypeMeta",
                            {String(1, "apiVersion", kAlways), String(2, "kind", kAlways)}};

// ---- k8s.io/apimachinery/pkg/apis/meta/v1
const MessageSpec kOwnerReference{
    "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference",
    {String(5, "apiVersion", kAlways), String(1, "kind", kAlways), String(3, "name", kAlways),
     String(4, "uid", kAlways), Bool(6, "controller", kPointer), Bool(7, "blockOwnerDeletion", kPointer)}};
const MessageSpec kManagedFieldsEntry{
    "k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    {String(1, "manager"), String(2, "operation"), String(3, "apiVersion"), Timestamp(4, "time", kPointer),
     String(6, "fieldsType"), RawJson(7, "fieldsV1"), String(8, "subresource")}};
const MessageSpec kObjectMeta{
    "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    {String(1, "name"), String(2, "generateName"), String(3, "namespace"), String(4, "selfLink"), String(5, "uid"),
     String(6, "resourceVersion"), Int64(7, "generation"), Timestamp(8, "creationTimestamp"),
     Timestamp(9, "deletionTimestamp", kPointer), Int64(10, "deletionGracePeriodSeconds", kPointer),
     StringMap(11, "labels"), StringMap(12, "annotations"), Messages(13, "ownerReferences", kOwnerReference),
     Strings(14, "finalizers"), Messages(17, "managedFields", kManagedFieldsEntry)}};
const MessageSpec kLabelSelectorRequirement{
    "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
    {String(1, "key", kAlways), String(2, "operator", kAlways), Strings(3, "values")}};
const MessageSpec kLabelSelector{
    "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
    {StringMap(1, "matchLabels"), Messages(2, "matchExpressions", kLabelSelectorRequirement)}};
const MessageSpec kCondition{
    "k8s.io.apimachinery.pkg.apis.meta.v1.Condition",
    {String(1, "type", kAlways), String(2, "status", kAlways), Int64(3, "observedGeneration"),
     Timestamp(4, "lastTransitionTime"), String(5, "reason", kAlways), String(6, "message", kAlways)}};

// ---- k8s.io/api/core/v1: Namespace, Secret, ConfigMap, ServiceAccount, Event
const MessageSpec kObjectReference{"k8s.io.api.core.v1.ObjectReference",
                                   {String(1, "kind"), String(2, "namespace"), String(3, "name"), String(4, "uid"),
                                    String(5, "apiVersion"), String(6, "resourceVersion"), String(7, "fieldPath")}};
const MessageSpec kLocalObjectReference{"k8s.io.api.core.v1.LocalObjectReference", {String(1, "name")}};
const MessageSpec kNamespaceSpec{"k8s.io.api.core.v1.NamespaceSpec", {Strings(1, "finalizers")}};
const MessageSpec kNamespaceCondition{"k8s.io.api.core.v1.NamespaceCondition",
                                      {String(1, "type", kAlways), String(2, "status", kAlways),
                                       Timestamp(4, "lastTransitionTime"), String(5, "reason"), String(6, "message")}};
const MessageSpec kNamespaceStatus{"k8s.io.api.core.v1.NamespaceStatus",
                                   {String(1, "phase"), Messages(2, "conditions", kNamespaceCondition)}};
const MessageSpec kNamespace{"k8s.io.api.core.v1.Namespace",
                             {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kNamespaceSpec, kAlways),
                              Message(3, "status", kNamespaceStatus, kAlways)}};
const MessageSpec kSecret{"k8s.io.api.core.v1.Secret",
                          {Message(1, "metadata", kObjectMeta, kAlways), BytesMap(2, "data"), String(3, "type"),
                           StringMap(4, "stringData"), Bool(5, "immutable", kPointer)}};
const MessageSpec kConfigMap{"k8s.io.api.core.v1.ConfigMap",
                             {Message(1, "metadata", kObjectMeta, kAlways), StringMap(2, "data"),
                              BytesMap(3, "binaryData"), Bool(4, "immutable", kPointer)}};
const MessageSpec kServiceAccount{
    "k8s.io.api.core.v1.ServiceAccount",
    {Message(1, "metadata", kObjectMeta, kAlways), Messages(2, "secrets", kObjectReference),
     Messages(3, "imagePullSecrets", kLocalObjectReference), Bool(4, "automountServiceAccountToken", kPointer)}};
const MessageSpec kEventSource{"k8s.io.api.core.v1.EventSource", {String(1, "component"), String(2, "host")}};
const MessageSpec kEventSeries{"k8s.io.api.core.v1.EventSeries",
                               {Int32(1, "count"), MicroTimestamp(2, "lastObservedTime")}};
const MessageSpec kEvent{
    "k8s.io.api.core.v1.Event",
    {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "involvedObject", kObjectReference, kAlways),
     String(3, "reason"), String(4, "message"), Message(5, "source", kEventSource, kAlways),
     Timestamp(6, "firstTimestamp"), Timestamp(7, "lastTimestamp"), Int32(8, "count"), String(9, "type"),
     MicroTimestamp(10, "eventTime"), Message(11, "series", kEventSeries, kPointer), String(12, "action"),
     Message(13, "related", kObjectReference, kPointer), String(14, "reportingComponent", kAlways),
     String(15, "reportingInstance", kAlways)}};

// ---- k8s.io/api/core/v1: Service
const MessageSpec kServicePort{
    "k8s.io.api.core.v1.ServicePort",
    {String(1, "name"), String(2, "protocol"), Int32(3, "port", kAlways), IntOrString(4, "targetPort", kAlways),
     Int32(5, "nodePort"), String(6, "appProtocol", kPointer)}};
const MessageSpec kClientIPConfig{"k8s.io.api.core.v1.ClientIPConfig", {Int32(1, "timeoutSeconds", kPointer)}};
const MessageSpec kSessionAffinityConfig{"k8s.io.api.core.v1.SessionAffinityConfig",
                                         {Message(1, "clientIP", kClientIPConfig, kPointer)}};
const MessageSpec kServiceSpec{"k8s.io.api.core.v1.ServiceSpec",
                               {Messages(1, "ports", kServicePort),
                                StringMap(2, "selector"),
                                String(3, "clusterIP"),
                                String(4, "type"),
                                Strings(5, "externalIPs"),
                                String(7, "sessionAffinity"),
                                String(8, "loadBalancerIP"),
                                Strings(9, "loadBalancerSourceRanges"),
                                String(10, "externalName"),
                                String(11, "externalTrafficPolicy"),
                                Int32(12, "healthCheckNodePort"),
                                Bool(13, "publishNotReadyAddresses"),
                                Message(14, "sessionAffinityConfig", kSessionAffinityConfig, kPointer),
                                String(17, "ipFamilyPolicy", kPointer),
                                Strings(18, "clusterIPs"),
                                Strings(19, "ipFamilies"),
                                Bool(20, "allocateLoadBalancerNodePorts", kPointer),
                                String(21, "loadBalancerClass", kPointer),
                                String(22, "internalTrafficPolicy", kPointer),
                                String(23, "trafficDistribution", kPointer)}};
const MessageSpec kPortStatus{
    "k8s.io.api.core.v1.PortStatus",
    {Int32(1, "port", kAlways), String(2, "protocol", kAlways), String(3, "error", kPointer)}};
const MessageSpec kLoadBalancerIngress{
    "k8s.io.api.core.v1.LoadBalancerIngress",
    {String(1, "ip"), String(2, "hostname"), String(3, "ipMode", kPointer), Messages(4, "ports", kPortStatus)}};
const MessageSpec kLoadBalancerStatus{"k8s.io.api.core.v1.LoadBalancerStatus",
                                      {Messages(1, "ingress", kLoadBalancerIngress)}};
const MessageSpec kServiceStatus{
    "k8s.io.api.core.v1.ServiceStatus",
    {Message(1, "loadBalancer", kLoadBalancerStatus, kAlways), Messages(2, "conditions", kCondition)}};
const MessageSpec kService{"k8s.io.api.core.v1.Service",
                           {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kServiceSpec, kAlways),
                            Message(3, "status", kServiceStatus, kAlways)}};

// ---- k8s.io/api/core/v1: the PodSpec. Volume sources devcluster cannot run are refused by name.
const MessageSpec kKeyToPath{"k8s.io.api.core.v1.KeyToPath",
                             {String(1, "key", kAlways), String(2, "path", kAlways), Int32(3, "mode", kPointer)}};
const MessageSpec kObjectFieldSelector{"k8s.io.api.core.v1.ObjectFieldSelector",
                                       {String(1, "apiVersion"), String(2, "fieldPath", kAlways)}};
const MessageSpec kResourceFieldSelector{
    "k8s.io.api.core.v1.ResourceFieldSelector",
    {String(1, "containerName"), String(2, "resource", kAlways), Quantity(3, "divisor", kAlways)}};
const MessageSpec kConfigMapKeySelector{"k8s.io.api.core.v1.ConfigMapKeySelector",
                                        {Message(1, "localObjectReference", kLocalObjectReference, kInline),
                                         String(2, "key", kAlways), Bool(3, "optional", kPointer)}};
const MessageSpec kSecretKeySelector{"k8s.io.api.core.v1.SecretKeySelector",
                                     {Message(1, "localObjectReference", kLocalObjectReference, kInline),
                                      String(2, "key", kAlways), Bool(3, "optional", kPointer)}};
const MessageSpec kEnvVarSource{"k8s.io.api.core.v1.EnvVarSource",
                                {Message(1, "fieldRef", kObjectFieldSelector, kPointer),
                                 Message(2, "resourceFieldRef", kResourceFieldSelector, kPointer),
                                 Message(3, "configMapKeyRef", kConfigMapKeySelector, kPointer),
                                 Message(4, "secretKeyRef", kSecretKeySelector, kPointer)}};
const MessageSpec kEnvVar{
    "k8s.io.api.core.v1.EnvVar",
    {String(1, "name", kAlways), String(2, "value"), Message(3, "valueFrom", kEnvVarSource, kPointer)}};
const MessageSpec kConfigMapEnvSource{
    "k8s.io.api.core.v1.ConfigMapEnvSource",
    {Message(1, "localObjectReference", kLocalObjectReference, kInline), Bool(2, "optional", kPointer)}};
const MessageSpec kSecretEnvSource{
    "k8s.io.api.core.v1.SecretEnvSource",
    {Message(1, "localObjectReference", kLocalObjectReference, kInline), Bool(2, "optional", kPointer)}};
const MessageSpec kEnvFromSource{"k8s.io.api.core.v1.EnvFromSource",
                                 {String(1, "prefix"), Message(2, "configMapRef", kConfigMapEnvSource, kPointer),
                                  Message(3, "secretRef", kSecretEnvSource, kPointer)}};
const MessageSpec kContainerPort{"k8s.io.api.core.v1.ContainerPort",
                                 {String(1, "name"), Int32(2, "hostPort"), Int32(3, "containerPort", kAlways),
                                  String(4, "protocol"), String(5, "hostIP")}};
const MessageSpec kResourceClaim{"k8s.io.api.core.v1.ResourceClaim",
                                 {String(1, "name", kAlways), String(2, "request")}};
const MessageSpec kResourceRequirements{
    "k8s.io.api.core.v1.ResourceRequirements",
    {QuantityMap(1, "limits"), QuantityMap(2, "requests"), Messages(3, "claims", kResourceClaim)}};
const MessageSpec kContainerResizePolicy{"k8s.io.api.core.v1.ContainerResizePolicy",
                                         {String(1, "resourceName", kAlways), String(2, "restartPolicy", kAlways)}};
const MessageSpec kVolumeMount{
    "k8s.io.api.core.v1.VolumeMount",
    {String(1, "name", kAlways), Bool(2, "readOnly"), String(3, "mountPath", kAlways), String(4, "subPath"),
     String(5, "mountPropagation", kPointer), String(6, "subPathExpr"), String(7, "recursiveReadOnly", kPointer)}};
const MessageSpec kVolumeDevice{"k8s.io.api.core.v1.VolumeDevice",
                                {String(1, "name", kAlways), String(2, "devicePath", kAlways)}};
const MessageSpec kExecAction{"k8s.io.api.core.v1.ExecAction", {Strings(1, "command")}};
const MessageSpec kHTTPHeader{"k8s.io.api.core.v1.HTTPHeader",
                              {String(1, "name", kAlways), String(2, "value", kAlways)}};
const MessageSpec kHTTPGetAction{"k8s.io.api.core.v1.HTTPGetAction",
                                 {String(1, "path"), IntOrString(2, "port", kAlways), String(3, "host"),
                                  String(4, "scheme"), Messages(5, "httpHeaders", kHTTPHeader)}};
const MessageSpec kTCPSocketAction{"k8s.io.api.core.v1.TCPSocketAction",
                                   {IntOrString(1, "port", kAlways), String(2, "host")}};
const MessageSpec kGRPCAction{"k8s.io.api.core.v1.GRPCAction",
                              {Int32(1, "port", kAlways), String(2, "service", kNullable)}};
const MessageSpec kSleepAction{"k8s.io.api.core.v1.SleepAction", {Int64(1, "seconds", kAlways)}};
const MessageSpec kProbeHandler{
    "k8s.io.api.core.v1.ProbeHandler",
    {Message(1, "exec", kExecAction, kPointer), Message(2, "httpGet", kHTTPGetAction, kPointer),
     Message(3, "tcpSocket", kTCPSocketAction, kPointer), Message(4, "grpc", kGRPCAction, kPointer)}};
const MessageSpec kProbe{"k8s.io.api.core.v1.Probe",
                         {Message(1, "handler", kProbeHandler, kInline), Int32(2, "initialDelaySeconds"),
                          Int32(3, "timeoutSeconds"), Int32(4, "periodSeconds"), Int32(5, "successThreshold"),
                          Int32(6, "failureThreshold"), Int64(7, "terminationGracePeriodSeconds", kPointer)}};
const MessageSpec kLifecycleHandler{
    "k8s.io.api.core.v1.LifecycleHandler",
    {Message(1, "exec", kExecAction, kPointer), Message(2, "httpGet", kHTTPGetAction, kPointer),
     Message(3, "tcpSocket", kTCPSocketAction, kPointer), Message(4, "sleep", kSleepAction, kPointer)}};
const MessageSpec kLifecycle{
    "k8s.io.api.core.v1.Lifecycle",
    {Message(1, "postStart", kLifecycleHandler, kPointer), Message(2, "preStop", kLifecycleHandler, kPointer)}};
const MessageSpec kCapabilities{"k8s.io.api.core.v1.Capabilities", {Strings(1, "add"), Strings(2, "drop")}};
const MessageSpec kSELinuxOptions{"k8s.io.api.core.v1.SELinuxOptions",
                                  {String(1, "user"), String(2, "role"), String(3, "type"), String(4, "level")}};
const MessageSpec kWindowsSecurityContextOptions{
    "k8s.io.api.core.v1.WindowsSecurityContextOptions",
    {String(1, "gmsaCredentialSpecName", kPointer), String(2, "gmsaCredentialSpec", kPointer),
     String(3, "runAsUserName", kPointer), Bool(4, "hostProcess", kPointer)}};
const MessageSpec kSeccompProfile{"k8s.io.api.core.v1.SeccompProfile",
                                  {String(1, "type", kAlways), String(2, "localhostProfile", kPointer)}};
const MessageSpec kAppArmorProfile{"k8s.io.api.core.v1.AppArmorProfile",
                                   {String(1, "type", kAlways), String(2, "localhostProfile", kPointer)}};
const MessageSpec kSecurityContext{
    "k8s.io.api.core.v1.SecurityContext",
    {Message(1, "capabilities", kCapabilities, kPointer), Bool(2, "privileged", kPointer),
     Message(3, "seLinuxOptions", kSELinuxOptions, kPointer), Int64(4, "runAsUser", kPointer),
     Bool(5, "runAsNonRoot", kPointer), Bool(6, "readOnlyRootFilesystem", kPointer),
     Bool(7, "allowPrivilegeEscalation", kPointer), Int64(8, "runAsGroup", kPointer), String(9, "procMount", kPointer),
     Message(10, "windowsOptions", kWindowsSecurityContextOptions, kPointer),
     Message(11, "seccompProfile", kSeccompProfile, kPointer),
     Message(12, "appArmorProfile", kAppArmorProfile, kPointer)}};
// EphemeralContainerCommon has Container's fields, numbers and JSON names.
const MessageSpec kContainer{"k8s.io.api.core.v1.Container",
                             {String(1, "name", kAlways),
                              String(2, "image"),
                              Strings(3, "command"),
                              Strings(4, "args"),
                              String(5, "workingDir"),
                              Messages(6, "ports", kContainerPort),
                              Messages(7, "env", kEnvVar),
                              Message(8, "resources", kResourceRequirements, kAlways),
                              Messages(9, "volumeMounts", kVolumeMount),
                              Message(10, "livenessProbe", kProbe, kPointer),
                              Message(11, "readinessProbe", kProbe, kPointer),
                              Message(12, "lifecycle", kLifecycle, kPointer),
                              String(13, "terminationMessagePath"),
                              String(14, "imagePullPolicy"),
                              Message(15, "securityContext", kSecurityContext, kPointer),
                              Bool(16, "stdin"),
                              Bool(17, "stdinOnce"),
                              Bool(18, "tty"),
                              Messages(19, "envFrom", kEnvFromSource),
                              String(20, "terminationMessagePolicy"),
                              Messages(21, "volumeDevices", kVolumeDevice),
                              Message(22, "startupProbe", kProbe, kPointer),
                              Messages(23, "resizePolicy", kContainerResizePolicy),
                              String(24, "restartPolicy", kPointer)}};
const MessageSpec kEphemeralContainer{
    "k8s.io.api.core.v1.EphemeralContainer",
    {Message(1, "ephemeralContainerCommon", kContainer, kInline), String(2, "targetContainerName")}};
const MessageSpec kHostPathVolumeSource{"k8s.io.api.core.v1.HostPathVolumeSource",
                                        {String(1, "path", kAlways), String(2, "type", kPointer)}};
const MessageSpec kEmptyDirVolumeSource{"k8s.io.api.core.v1.EmptyDirVolumeSource",
                                        {String(1, "medium"), Quantity(2, "sizeLimit", kPointer)}};
const MessageSpec kSecretVolumeSource{"k8s.io.api.core.v1.SecretVolumeSource",
                                      {String(1, "secretName"), Messages(2, "items", kKeyToPath),
                                       Int32(3, "defaultMode", kPointer), Bool(4, "optional", kPointer)}};
const MessageSpec kNFSVolumeSource{"k8s.io.api.core.v1.NFSVolumeSource",
                                   {String(1, "server", kAlways), String(2, "path", kAlways), Bool(3, "readOnly")}};
const MessageSpec kPersistentVolumeClaimVolumeSource{"k8s.io.api.core.v1.PersistentVolumeClaimVolumeSource",
                                                     {String(1, "claimName", kAlways), Bool(2, "readOnly")}};
const MessageSpec kDownwardAPIVolumeFile{
    "k8s.io.api.core.v1.DownwardAPIVolumeFile",
    {String(1, "path", kAlways), Message(2, "fieldRef", kObjectFieldSelector, kPointer),
     Message(3, "resourceFieldRef", kResourceFieldSelector, kPointer), Int32(4, "mode", kPointer)}};
const MessageSpec kDownwardAPIVolumeSource{
    "k8s.io.api.core.v1.DownwardAPIVolumeSource",
    {Messages(1, "items", kDownwardAPIVolumeFile), Int32(2, "defaultMode", kPointer)}};
const MessageSpec kConfigMapVolumeSource{
    "k8s.io.api.core.v1.ConfigMapVolumeSource",
    {Message(1, "localObjectReference", kLocalObjectReference, kInline), Messages(2, "items", kKeyToPath),
     Int32(3, "defaultMode", kPointer), Bool(4, "optional", kPointer)}};
const MessageSpec kSecretProjection{"k8s.io.api.core.v1.SecretProjection",
                                    {Message(1, "localObjectReference", kLocalObjectReference, kInline),
                                     Messages(2, "items", kKeyToPath), Bool(4, "optional", kPointer)}};
const MessageSpec kConfigMapProjection{"k8s.io.api.core.v1.ConfigMapProjection",
                                       {Message(1, "localObjectReference", kLocalObjectReference, kInline),
                                        Messages(2, "items", kKeyToPath), Bool(4, "optional", kPointer)}};
const MessageSpec kDownwardAPIProjection{"k8s.io.api.core.v1.DownwardAPIProjection",
                                         {Messages(1, "items", kDownwardAPIVolumeFile)}};
const MessageSpec kServiceAccountTokenProjection{
    "k8s.io.api.core.v1.ServiceAccountTokenProjection",
    {String(1, "audience"), Int64(2, "expirationSeconds", kPointer), String(3, "path", kAlways)}};
const MessageSpec kClusterTrustBundleProjection{
    "k8s.io.api.core.v1.ClusterTrustBundleProjection",
    {String(1, "name", kPointer), String(2, "signerName", kPointer),
     Message(3, "labelSelector", kLabelSelector, kPointer), String(4, "path", kAlways), Bool(5, "optional", kPointer)}};
const MessageSpec kVolumeProjection{
    "k8s.io.api.core.v1.VolumeProjection",
    {Message(1, "secret", kSecretProjection, kPointer), Message(2, "downwardAPI", kDownwardAPIProjection, kPointer),
     Message(3, "configMap", kConfigMapProjection, kPointer),
     Message(4, "serviceAccountToken", kServiceAccountTokenProjection, kPointer),
     Message(5, "clusterTrustBundle", kClusterTrustBundleProjection, kPointer)}};
const MessageSpec kProjectedVolumeSource{
    "k8s.io.api.core.v1.ProjectedVolumeSource",
    {Messages(1, "sources", kVolumeProjection, kAlways), Int32(2, "defaultMode", kPointer)}};
const MessageSpec kCSIVolumeSource{
    "k8s.io.api.core.v1.CSIVolumeSource",
    {String(1, "driver", kAlways), Bool(2, "readOnly", kPointer), String(3, "fsType", kPointer),
     StringMap(4, "volumeAttributes"), Message(5, "nodePublishSecretRef", kLocalObjectReference, kPointer)}};
const MessageSpec kImageVolumeSource{"k8s.io.api.core.v1.ImageVolumeSource",
                                     {String(1, "reference"), String(2, "pullPolicy")}};
const MessageSpec kVolumeSource{"k8s.io.api.core.v1.VolumeSource",
                                {Message(1, "hostPath", kHostPathVolumeSource, kPointer),
                                 Message(2, "emptyDir", kEmptyDirVolumeSource, kPointer),
                                 NotDecoded(3, "gcePersistentDisk"),
                                 NotDecoded(4, "awsElasticBlockStore"),
                                 NotDecoded(5, "gitRepo"),
                                 Message(6, "secret", kSecretVolumeSource, kPointer),
                                 Message(7, "nfs", kNFSVolumeSource, kPointer),
                                 NotDecoded(8, "iscsi"),
                                 NotDecoded(9, "glusterfs"),
                                 Message(10, "persistentVolumeClaim", kPersistentVolumeClaimVolumeSource, kPointer),
                                 NotDecoded(11, "rbd"),
                                 NotDecoded(12, "flexVolume"),
                                 NotDecoded(13, "cinder"),
                                 NotDecoded(14, "cephfs"),
                                 NotDecoded(15, "flocker"),
                                 Message(16, "downwardAPI", kDownwardAPIVolumeSource, kPointer),
                                 NotDecoded(17, "fc"),
                                 NotDecoded(18, "azureFile"),
                                 Message(19, "configMap", kConfigMapVolumeSource, kPointer),
                                 NotDecoded(20, "vsphereVolume"),
                                 NotDecoded(21, "quobyte"),
                                 NotDecoded(22, "azureDisk"),
                                 NotDecoded(23, "photonPersistentDisk"),
                                 NotDecoded(24, "portworxVolume"),
                                 NotDecoded(25, "scaleIO"),
                                 Message(26, "projected", kProjectedVolumeSource, kPointer),
                                 NotDecoded(27, "storageos"),
                                 Message(28, "csi", kCSIVolumeSource, kPointer),
                                 NotDecoded(29, "ephemeral"),
                                 Message(30, "image", kImageVolumeSource, kPointer)}};
const MessageSpec kVolume{"k8s.io.api.core.v1.Volume",
                          {String(1, "name", kAlways), Message(2, "volumeSource", kVolumeSource, kInline)}};
const MessageSpec kNodeSelectorRequirement{
    "k8s.io.api.core.v1.NodeSelectorRequirement",
    {String(1, "key", kAlways), String(2, "operator", kAlways), Strings(3, "values")}};
const MessageSpec kNodeSelectorTerm{
    "k8s.io.api.core.v1.NodeSelectorTerm",
    {Messages(1, "matchExpressions", kNodeSelectorRequirement), Messages(2, "matchFields", kNodeSelectorRequirement)}};
const MessageSpec kNodeSelector{"k8s.io.api.core.v1.NodeSelector",
                                {Messages(1, "nodeSelectorTerms", kNodeSelectorTerm, kAlways)}};
const MessageSpec kPreferredSchedulingTerm{
    "k8s.io.api.core.v1.PreferredSchedulingTerm",
    {Int32(1, "weight", kAlways), Message(2, "preference", kNodeSelectorTerm, kAlways)}};
const MessageSpec kNodeAffinity{
    "k8s.io.api.core.v1.NodeAffinity",
    {Message(1, "requiredDuringSchedulingIgnoredDuringExecution", kNodeSelector, kPointer),
     Messages(2, "preferredDuringSchedulingIgnoredDuringExecution", kPreferredSchedulingTerm)}};
const MessageSpec kPodAffinityTerm{
    "k8s.io.api.core.v1.PodAffinityTerm",
    {Message(1, "labelSelector", kLabelSelector, kPointer), Strings(2, "namespaces"), String(3, "topologyKey", kAlways),
     Message(4, "namespaceSelector", kLabelSelector, kPointer), Strings(5, "matchLabelKeys"),
     Strings(6, "mismatchLabelKeys")}};
const MessageSpec kWeightedPodAffinityTerm{
    "k8s.io.api.core.v1.WeightedPodAffinityTerm",
    {Int32(1, "weight", kAlways), Message(2, "podAffinityTerm", kPodAffinityTerm, kAlways)}};
// PodAntiAffinity has the same fields as PodAffinity.
const MessageSpec kPodAffinity{
    "k8s.io.api.core.v1.PodAffinity",
    {Messages(1, "requiredDuringSchedulingIgnoredDuringExecution", kPodAffinityTerm),
     Messages(2, "preferredDuringSchedulingIgnoredDuringExecution", kWeightedPodAffinityTerm)}};
const MessageSpec kAffinity{
    "k8s.io.api.core.v1.Affinity",
    {Message(1, "nodeAffinity", kNodeAffinity, kPointer), Message(2, "podAffinity", kPodAffinity, kPointer),
     Message(3, "podAntiAffinity", kPodAffinity, kPointer)}};
const MessageSpec kToleration{"k8s.io.api.core.v1.Toleration",
                              {String(1, "key"), String(2, "operator"), String(3, "value"), String(4, "effect"),
                               Int64(5, "tolerationSeconds", kPointer)}};
const MessageSpec kHostAlias{"k8s.io.api.core.v1.HostAlias", {String(1, "ip", kAlways), Strings(2, "hostnames")}};
const MessageSpec kPodDNSConfigOption{"k8s.io.api.core.v1.PodDNSConfigOption",
                                      {String(1, "name"), String(2, "value", kPointer)}};
const MessageSpec kPodDNSConfig{
    "k8s.io.api.core.v1.PodDNSConfig",
    {Strings(1, "nameservers"), Strings(2, "searches"), Messages(3, "options", kPodDNSConfigOption)}};
const MessageSpec kPodReadinessGate{"k8s.io.api.core.v1.PodReadinessGate", {String(1, "conditionType", kAlways)}};
const MessageSpec kTopologySpreadConstraint{
    "k8s.io.api.core.v1.TopologySpreadConstraint",
    {Int32(1, "maxSkew", kAlways), String(2, "topologyKey", kAlways), String(3, "whenUnsatisfiable", kAlways),
     Message(4, "labelSelector", kLabelSelector, kPointer), Int32(5, "minDomains", kPointer),
     String(6, "nodeAffinityPolicy", kPointer), String(7, "nodeTaintsPolicy", kPointer), Strings(8, "matchLabelKeys")}};
const MessageSpec kPodOS{"k8s.io.api.core.v1.PodOS", {String(1, "name", kAlways)}};
const MessageSpec kPodSchedulingGate{"k8s.io.api.core.v1.PodSchedulingGate", {String(1, "name", kAlways)}};
const MessageSpec kPodResourceClaim{"k8s.io.api.core.v1.PodResourceClaim",
                                    {String(1, "name", kAlways), String(3, "resourceClaimName", kPointer),
                                     String(4, "resourceClaimTemplateName", kPointer)}};
const MessageSpec kSysctl{"k8s.io.api.core.v1.Sysctl", {String(1, "name", kAlways), String(2, "value", kAlways)}};
const MessageSpec kPodSecurityContext{
    "k8s.io.api.core.v1.PodSecurityContext",
    {Message(1, "seLinuxOptions", kSELinuxOptions, kPointer), Int64(2, "runAsUser", kPointer),
     Bool(3, "runAsNonRoot", kPointer), Int64s(4, "supplementalGroups"), Int64(5, "fsGroup", kPointer),
     Int64(6, "runAsGroup", kPointer), Messages(7, "sysctls", kSysctl),
     Message(8, "windowsOptions", kWindowsSecurityContextOptions, kPointer), String(9, "fsGroupChangePolicy", kPointer),
     Message(10, "seccompProfile", kSeccompProfile, kPointer),
     Message(11, "appArmorProfile", kAppArmorProfile, kPointer), String(12, "supplementalGroupsPolicy", kPointer),
     String(13, "seLinuxChangePolicy", kPointer)}};
const MessageSpec kPodSpec{"k8s.io.api.core.v1.PodSpec",
                           {Messages(1, "volumes", kVolume),
                            Messages(2, "containers", kContainer, kAlways),
                            String(3, "restartPolicy"),
                            Int64(4, "terminationGracePeriodSeconds", kPointer),
                            Int64(5, "activeDeadlineSeconds", kPointer),
                            String(6, "dnsPolicy"),
                            StringMap(7, "nodeSelector"),
                            String(8, "serviceAccountName"),
                            String(9, "serviceAccount"),
                            String(10, "nodeName"),
                            Bool(11, "hostNetwork"),
                            Bool(12, "hostPID"),
                            Bool(13, "hostIPC"),
                            Message(14, "securityContext", kPodSecurityContext, kPointer),
                            Messages(15, "imagePullSecrets", kLocalObjectReference),
                            String(16, "hostname"),
                            String(17, "subdomain"),
                            Message(18, "affinity", kAffinity, kPointer),
                            String(19, "schedulerName"),
                            Messages(20, "initContainers", kContainer),
                            Bool(21, "automountServiceAccountToken", kPointer),
                            Messages(22, "tolerations", kToleration),
                            Messages(23, "hostAliases", kHostAlias),
                            String(24, "priorityClassName"),
                            Int32(25, "priority", kPointer),
                            Message(26, "dnsConfig", kPodDNSConfig, kPointer),
                            Bool(27, "shareProcessNamespace", kPointer),
                            Messages(28, "readinessGates", kPodReadinessGate),
                            String(29, "runtimeClassName", kPointer),
                            Bool(30, "enableServiceLinks", kPointer),
                            String(31, "preemptionPolicy", kPointer),
                            QuantityMap(32, "overhead"),
                            Messages(33, "topologySpreadConstraints", kTopologySpreadConstraint),
                            Messages(34, "ephemeralContainers", kEphemeralContainer),
                            Bool(35, "setHostnameAsFQDN", kPointer),
                            Message(36, "os", kPodOS, kPointer),
                            Bool(37, "hostUsers", kPointer),
                            Messages(38, "schedulingGates", kPodSchedulingGate),
                            Messages(39, "resourceClaims", kPodResourceClaim),
                            Message(40, "resources", kResourceRequirements, kPointer)}};
const MessageSpec kPodCondition{
    "k8s.io.api.core.v1.PodCondition",
    {String(1, "type", kAlways), String(2, "status", kAlways), Timestamp(3, "lastProbeTime"),
     Timestamp(4, "lastTransitionTime"), String(5, "reason"), String(6, "message")}};
const MessageSpec kPodIP{"k8s.io.api.core.v1.PodIP", {String(1, "ip", kAlways)}};
const MessageSpec kHostIP{"k8s.io.api.core.v1.HostIP", {String(1, "ip", kAlways)}};
const MessageSpec kPodResourceClaimStatus{"k8s.io.api.core.v1.PodResourceClaimStatus",
                                          {String(1, "name", kAlways), String(2, "resourceClaimName", kPointer)}};
// Container statuses are the kubelet's to write; a client creating a Pod sends none.
const MessageSpec kPodStatus{
    "k8s.io.api.core.v1.PodStatus",
    {String(1, "phase"), Messages(2, "conditions", kPodCondition), String(3, "message"), String(4, "reason"),
     String(5, "hostIP"), String(6, "podIP"), Timestamp(7, "startTime", kPointer), NotDecoded(8, "containerStatuses"),
     String(9, "qosClass"), NotDecoded(10, "initContainerStatuses"), String(11, "nominatedNodeName"),
     Messages(12, "podIPs", kPodIP), NotDecoded(13, "ephemeralContainerStatuses"), String(14, "resize"),
     Messages(15, "resourceClaimStatuses", kPodResourceClaimStatus), Messages(16, "hostIPs", kHostIP)}};
const MessageSpec kPod{"k8s.io.api.core.v1.Pod",
                       {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kPodSpec, kAlways),
                        Message(3, "status", kPodStatus, kAlways)}};
const MessageSpec kPodTemplateSpec{
    "k8s.io.api.core.v1.PodTemplateSpec",
    {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kPodSpec, kAlways)}};

// ---- k8s.io/api/apps/v1
const MessageSpec kRollingUpdateDeployment{
    "k8s.io.api.apps.v1.RollingUpdateDeployment",
    {IntOrString(1, "maxUnavailable", kPointer), IntOrString(2, "maxSurge", kPointer)}};
const MessageSpec kDeploymentStrategy{
    "k8s.io.api.apps.v1.DeploymentStrategy",
    {String(1, "type"), Message(2, "rollingUpdate", kRollingUpdateDeployment, kPointer)}};
const MessageSpec kDeploymentCondition{
    "k8s.io.api.apps.v1.DeploymentCondition",
    {String(1, "type", kAlways), String(2, "status", kAlways), String(4, "reason"), String(5, "message"),
     Timestamp(6, "lastUpdateTime"), Timestamp(7, "lastTransitionTime")}};
const MessageSpec kDeploymentStatus{
    "k8s.io.api.apps.v1.DeploymentStatus",
    {Int64(1, "observedGeneration"), Int32(2, "replicas"), Int32(3, "updatedReplicas"), Int32(4, "availableReplicas"),
     Int32(5, "unavailableReplicas"), Messages(6, "conditions", kDeploymentCondition), Int32(7, "readyReplicas"),
     Int32(8, "collisionCount", kPointer)}};
const MessageSpec kDeploymentSpec{
    "k8s.io.api.apps.v1.DeploymentSpec",
    {Int32(1, "replicas", kPointer), Message(2, "selector", kLabelSelector, kNullable),
     Message(3, "template", kPodTemplateSpec, kAlways), Message(4, "strategy", kDeploymentStrategy, kAlways),
     Int32(5, "minReadySeconds"), Int32(6, "revisionHistoryLimit", kPointer), Bool(7, "paused"),
     Int32(9, "progressDeadlineSeconds", kPointer)}};
const MessageSpec kDeployment{
    "k8s.io.api.apps.v1.Deployment",
    {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kDeploymentSpec, kAlways),
     Message(3, "status", kDeploymentStatus, kAlways)}};

// ---- k8s.io/apimachinery/pkg/apis/meta/v1 DeleteOptions (kubectl drain's DELETE of a Pod) and
// k8s.io/api/policy/v1 Eviction (its eviction; policy/v1beta1 has the same fields). Every field of
// both Go structs is a pointer or a slice with omitempty.
const MessageSpec kPreconditions{"k8s.io.apimachinery.pkg.apis.meta.v1.Preconditions",
                                 {String(1, "uid", kPointer), String(2, "resourceVersion", kPointer)}};
const MessageSpec kDeleteOptions{
    "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    {Int64(1, "gracePeriodSeconds", kPointer), Message(2, "preconditions", kPreconditions, kPointer),
     Bool(3, "orphanDependents", kPointer), String(4, "propagationPolicy", kPointer), Strings(5, "dryRun"),
     Bool(6, "ignoreStoreReadErrorWithClusterBreakingPotential", kPointer)}};
const MessageSpec kEviction{"k8s.io.api.policy.v1.Eviction",
                            {Message(1, "metadata", kObjectMeta, kAlways),
                             Message(2, "deleteOptions", kDeleteOptions, kPointer)}};

// ---- k8s.io/api/authentication/v1
const MessageSpec kBoundObjectReference{
    "k8s.io.api.authentication.v1.BoundObjectReference",
    {String(1, "kind"), String(2, "apiVersion"), String(3, "name"), String(4, "uid")}};
const MessageSpec kTokenRequestSpec{
    "k8s.io.api.authentication.v1.TokenRequestSpec",
    {Strings(1, "audiences", kAlways), Message(3, "boundObjectRef", kBoundObjectReference, kNullable),
     Int64(4, "expirationSeconds", kNullable)}};
const MessageSpec kTokenRequestStatus{"k8s.io.api.authentication.v1.TokenRequestStatus",
                                      {String(1, "token", kAlways), Timestamp(2, "expirationTimestamp")}};
const MessageSpec kTokenRequest{
    "k8s.io.api.authentication.v1.TokenRequest",
    {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kTokenRequestSpec, kAlways),
     Message(3, "status", kTokenRequestStatus, kAlways)}};

// ---- k8s.io/api/core/v1 ResourceQuota (scopes and scopeSelector are refused by the server anyway)
const MessageSpec kScopedResourceSelectorRequirement{
    "k8s.io.api.core.v1.ScopedResourceSelectorRequirement",
    {String(1, "scopeName", kAlways), String(2, "operator", kAlways), Strings(3, "values")}};
const MessageSpec kScopeSelector{"k8s.io.api.core.v1.ScopeSelector",
                                 {Messages(1, "matchExpressions", kScopedResourceSelectorRequirement)}};
const MessageSpec kResourceQuotaSpec{
    "k8s.io.api.core.v1.ResourceQuotaSpec",
    {QuantityMap(1, "hard"), Strings(2, "scopes"), Message(3, "scopeSelector", kScopeSelector, kPointer)}};
const MessageSpec kResourceQuotaStatus{"k8s.io.api.core.v1.ResourceQuotaStatus",
                                       {QuantityMap(1, "hard"), QuantityMap(2, "used")}};
const MessageSpec kResourceQuota{
    "k8s.io.api.core.v1.ResourceQuota",
    {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kResourceQuotaSpec, kAlways),
     Message(3, "status", kResourceQuotaStatus, kAlways)}};

// ---- k8s.io/api/rbac/v1
const MessageSpec kPolicyRule{"k8s.io.api.rbac.v1.PolicyRule",
                              {Strings(1, "verbs", kAlways), Strings(2, "apiGroups"), Strings(3, "resources"),
                               Strings(4, "resourceNames"), Strings(5, "nonResourceURLs")}};
const MessageSpec kAggregationRule{"k8s.io.api.rbac.v1.AggregationRule",
                                   {Messages(1, "clusterRoleSelectors", kLabelSelector)}};
const MessageSpec kRole{"k8s.io.api.rbac.v1.Role",
                        {Message(1, "metadata", kObjectMeta, kAlways), Messages(2, "rules", kPolicyRule, kAlways)}};
const MessageSpec kClusterRole{
    "k8s.io.api.rbac.v1.ClusterRole",
    {Message(1, "metadata", kObjectMeta, kAlways), Messages(2, "rules", kPolicyRule, kAlways),
     Message(3, "aggregationRule", kAggregationRule, kPointer)}};
const MessageSpec kSubject{
    "k8s.io.api.rbac.v1.Subject",
    {String(1, "kind", kAlways), String(2, "apiGroup"), String(3, "name", kAlways), String(4, "namespace")}};
const MessageSpec kRoleRef{"k8s.io.api.rbac.v1.RoleRef",
                           {String(1, "apiGroup", kAlways), String(2, "kind", kAlways), String(3, "name", kAlways)}};
// ClusterRoleBinding has the same fields as RoleBinding.
const MessageSpec kRoleBinding{"k8s.io.api.rbac.v1.RoleBinding",
                               {Message(1, "metadata", kObjectMeta, kAlways), Messages(2, "subjects", kSubject),
                                Message(3, "roleRef", kRoleRef, kAlways)}};

// ---- k8s.io/api/coordination/v1
const MessageSpec kLeaseSpec{
    "k8s.io.api.coordination.v1.LeaseSpec",
    {String(1, "holderIdentity", kPointer), Int32(2, "leaseDurationSeconds", kPointer),
     MicroTimestamp(3, "acquireTime", kPointer), MicroTimestamp(4, "renewTime", kPointer),
     Int32(5, "leaseTransitions", kPointer), String(6, "strategy", kPointer), String(7, "preferredHolder", kPointer)}};
const MessageSpec kLease{"k8s.io.api.coordination.v1.Lease",
                         {Message(1, "metadata", kObjectMeta, kAlways), Message(2, "spec", kLeaseSpec, kAlways)}};

struct DecodableKind {
  std::string_view api_version;
  std::string_view kind;
  const MessageSpec* message;
};

// Node and CustomResourceDefinition, which devcluster also serves, get the 415: kubectl creates
// neither from flags, and a CRD's schema is a recursive message.
constexpr DecodableKind kDecodableKinds[] = {
    {"v1", "Namespace", &kNamespace},
    {"v1", "Secret", &kSecret},
    {"v1", "ConfigMap", &kConfigMap},
    {"v1", "ServiceAccount", &kServiceAccount},
    {"v1", "Service", &kService},
    {"v1", "Event", &kEvent},
    {"v1", "Pod", &kPod},
    {"v1", "ResourceQuota", &kResourceQuota},
    {"apps/v1", "Deployment", &kDeployment},
    {"authentication.k8s.io/v1", "TokenRequest", &kTokenRequest},
    {"rbac.authorization.k8s.io/v1", "Role", &kRole},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", &kClusterRole},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", &kRoleBinding},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &kRoleBinding},
    {"coordination.k8s.io/v1", "Lease", &kLease},
    {"policy/v1", "Eviction", &kEviction},
    {"policy/v1beta1", "Eviction", &kEviction},
};

constexpr std::string_view kMagic{"k8s\0", 4};
// Tables nest a few levels (a Deployment's probe's port is nine deep); more than this is hostile.
constexpr int kMaxDepth = 32;
// metav1.Time must be within years 0001..9999 to have an RFC 3339 form.
constexpr std::int64_t kMinSeconds = -62135596800;  // 0001-01-01T00:00:00Z, Go's zero time
constexpr std::int64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z

bool IsUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    }
    if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
      code = byte & 0x1Fu;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      code = byte & 0x0Fu;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      code = byte & 0x07u;
    } else {
      return false;
    }
    if (text.size() - i < length) {
      return false;
    }
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0u) != 0x80u) {
        return false;
      }
      code = (code << 6) | (next & 0x3Fu);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

// RFC 3339 in UTC as Go's time package writes it for metav1.Time ("2024-05-01T12:00:00Z") or, with
// `micros`, for metav1.MicroTime ("2024-05-01T12:00:00.000000Z").
std::string Rfc3339(std::int64_t seconds, std::optional<int> micros) {
  using namespace std::chrono;
  const sys_seconds instant{std::chrono::seconds(seconds)};
  const sys_days day = floor<days>(instant);
  const year_month_day date{day};
  const hh_mm_ss<std::chrono::seconds> clock{instant - day};
  char buffer[48];
  const int length =
      micros ? std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", int(date.year()),
                             unsigned(date.month()), unsigned(date.day()), int(clock.hours().count()),
                             int(clock.minutes().count()), int(clock.seconds().count()), *micros)
             : std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02dZ", int(date.year()),
                             unsigned(date.month()), unsigned(date.day()), int(clock.hours().count()),
                             int(clock.minutes().count()), int(clock.seconds().count()));
  return std::string(buffer, static_cast<std::size_t>(length));
}

// resource.ParseQuantity's grammar: a signed decimal, then "", a decimal SI suffix (n u m k M G T P
// E), a binary one (Ki .. Ei) or an exponent (e3, E-2). The error is ParseQuantity's.
std::optional<std::string> QuantityError(std::string_view text) {
  const std::string format_wrong =
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    ++i;
  }
  const std::size_t number_start = i;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) {
    ++i;
  }
  const std::string_view number = text.substr(number_start, i - number_start);
  if (number.empty() || number.find('.') != number.rfind('.')) {
    return format_wrong;
  }
  const std::string_view suffix = text.substr(i);
  static constexpr std::string_view kSuffixes[] = {"",  "n", "u",  "m",  "k",  "M",  "G",  "T",
                                                   "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (const std::string_view known : kSuffixes) {
    if (suffix == known) {
      return std::nullopt;
    }
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::size_t k = 1;
    if (k < suffix.size() && (suffix[k] == '+' || suffix[k] == '-')) {
      ++k;
    }
    if (k < suffix.size() && suffix.find_first_not_of("0123456789", k) == std::string_view::npos) {
      return std::nullopt;
    }
  }
  return suffix.find_first_not_of("eEinumkKMGTP+-0123456789") == std::string_view::npos
             ? std::string("unable to parse quantity's suffix")
             : format_wrong;
}

// One message's bytes, read with libprotobuf's CodedInputStream. Lengths are checked against the
// bytes left before a slice is taken, and slices are views into the body: nothing is copied.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : bytes_(bytes), in_(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size())) {}

  bool AtEnd() const { return Position() == bytes_.size(); }
  // nullopt for a truncated tag or field number 0.
  std::optional<std::uint32_t> Tag() {
    const std::uint32_t tag = in_.ReadTagNoLastTag();
    return tag == 0 ? std::nullopt : std::optional<std::uint32_t>(tag);
  }
  std::optional<std::uint64_t> Varint() {
    std::uint64_t value = 0;
    return in_.ReadVarint64(&value) ? std::optional<std::uint64_t>(value) : std::nullopt;
  }
  // A length-delimited payload; nullopt when its length runs past the end.
  std::optional<std::string_view> Delimited() {
    const std::optional<std::uint64_t> length = Varint();
    if (!length || *length > bytes_.size() - Position()) {
      return std::nullopt;
    }
    const std::size_t start = Position();
    if (!in_.Skip(static_cast<int>(*length))) {
      return std::nullopt;
    }
    return bytes_.substr(start, static_cast<std::size_t>(*length));
  }

 private:
  std::size_t Position() const { return static_cast<std::size_t>(in_.CurrentPosition()); }

  std::string_view bytes_;
  google::protobuf::io::CodedInputStream in_;
};

std::string Join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

bool IsEmpty(const nlohmann::json& value) {
  return value.is_null() || (value.is_string() && value.get_ref<const std::string&>().empty()) ||
         (value.is_boolean() && !value.get<bool>()) || (value.is_number() && value == 0) ||
         ((value.is_array() || value.is_object()) && value.empty());
}

bool IsVarint(Kind kind) { return kind == Kind::kBool || kind == Kind::kInt32 || kind == Kind::kInt64; }

std::string WireTypeName(int wire_type) {
  switch (wire_type) {
    case WireFormatLite::WIRETYPE_VARINT:
      return "0 (varint)";
    case WireFormatLite::WIRETYPE_FIXED64:
      return "1 (64-bit)";
    case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
      return "2 (length-delimited)";
    case WireFormatLite::WIRETYPE_START_GROUP:
      return "3 (group start)";
    case WireFormatLite::WIRETYPE_END_GROUP:
      return "4 (group end)";
    case WireFormatLite::WIRETYPE_FIXED32:
      return "5 (32-bit)";
    default:
      return std::to_string(wire_type) + " (invalid)";
  }
}

// Decodes messages of one request's object; `kind_` names it in error messages.
class Decoder {
 public:
  explicit Decoder(std::string kind) : kind_(std::move(kind)) {}

  nlohmann::json Message(std::string_view bytes, const MessageSpec& spec, const std::string& path, int depth) const {
    if (depth > kMaxDepth) {
      Malformed(path, "messages nest more than " + std::to_string(kMaxDepth) + " deep");
    }
    const std::size_t count = spec.fields.size();
    std::vector<std::optional<nlohmann::json>> values(count);
    // A singular message may come in several pieces, which protobuf merges: kept as the pieces'
    // bytes one after another, which decode as the merge.
    std::vector<std::optional<std::string>> pieces(count);
    WireReader reader(bytes);
    while (!reader.AtEnd()) {
      const std::optional<std::uint32_t> tag = reader.Tag();
      if (!tag) {
        Malformed(path, "a field tag is truncated or names field 0");
      }
      const int number = WireFormatLite::GetTagFieldNumber(*tag);
      const int wire_type = WireFormatLite::GetTagWireType(*tag);
      std::size_t index = 0;
      while (index < count && spec.fields[index].number != number) {
        ++index;
      }
      if (index == count) {
        throw BadRequest("the protobuf " + kind_ + " has field " + std::to_string(number) + " in " +
                         std::string(spec.name) + Where(path) +
                         ", which is not a field of that message in Kubernetes 1.32 as devcluster knows it");
      }
      const FieldSpec& field = spec.fields[index];
      const std::string field_path = Join(path, field.json);
      if (field.kind == Kind::kNotDecoded) {
        throw ApiError(415, "UnsupportedMediaType",
                       "devcluster does not decode " + field_path + " (field " + std::to_string(number) + " of " +
                           std::string(spec.name) + ") in a protobuf " + kind_ +
                           "; send the object as application/json");
      }
      if (IsVarint(field.kind)) {
        if (wire_type == WireFormatLite::WIRETYPE_VARINT) {
          Store(values[index], field, Scalar(field, reader.Varint(), field_path));
        } else if (wire_type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED && field.repeated) {
          // A packed list of varints.
          WireReader packed(Payload(reader, field_path));
          while (!packed.AtEnd()) {
            Store(values[index], field, Scalar(field, packed.Varint(), field_path));
          }
        } else {
          WrongWireType(field_path, wire_type, WireFormatLite::WIRETYPE_VARINT);
        }
        continue;
      }
      if (wire_type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        WrongWireType(field_path, wire_type, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
      }
      const std::string_view payload = Payload(reader, field_path);
      switch (field.kind) {
        case Kind::kString:
          Store(values[index], field, Text(payload, field_path));
          break;
        case Kind::kStringMap:
        case Kind::kBytesMap:
        case Kind::kQuantityMap:
          MapEntry(values[index], field, payload, field_path);
          break;
        default:
          if (field.repeated) {
            const std::size_t position = values[index] ? values[index]->size() : 0;
            Store(values[index], field,
                  Nested(field, payload, field_path + "[" + std::to_string(position) + "]", depth + 1));
          } else {
            if (!pieces[index]) {
              pieces[index].emplace();
            }
            pieces[index]->append(payload);
          }
      }
    }

    nlohmann::json out = nlohmann::json::object();
    for (std::size_t i = 0; i < count; ++i) {
      const FieldSpec& field = spec.fields[i];
      std::optional<nlohmann::json>& value = values[i];
      if (field.presence == kInline) {
        // The embedded struct's fields sit at this level, so errors name this path.
        const nlohmann::json inner = Nested(field, pieces[i].value_or(""), path, depth + 1);
        for (const auto& [key, inner_value] : inner.items()) {
          out[key] = inner_value;
        }
        continue;
      }
      if (pieces[i]) {
        value = Nested(field, *pieces[i], Join(path, field.json), depth + 1);
      }
      const std::string key(field.json);
      switch (field.presence) {
        case kOmitEmpty:
          if (value && !IsEmpty(*value)) {
            out[key] = std::move(*value);
          }
          break;
        case kPointer:
          if (value) {
            out[key] = std::move(*value);
          }
          break;
        case kAlways:
          out[key] = value ? std::move(*value) : Zero(field, Join(path, field.json), depth);
          break;
        case kNullable:
          out[key] = value ? std::move(*value) : nlohmann::json(nullptr);
          break;
        case kInline:
          break;
      }
    }
    return out;
  }

  [[noreturn]] void Malformed(const std::string& path, const std::string& what) const {
    throw BadRequest("the protobuf " + kind_ + " is malformed" + Where(path) + ": " + what);
  }

  std::string_view Payload(WireReader& reader, const std::string& path) const {
    const std::optional<std::string_view> payload = reader.Delimited();
    if (!payload) {
      Malformed(path, "a length runs past the end of its message");
    }
    return *payload;
  }

  std::string Text(std::string_view bytes, const std::string& path) const {
    if (!IsUtf8(bytes)) {
      Malformed(path, "a string is not valid UTF-8");
    }
    return std::string(bytes);
  }

 private:
  static std::string Where(const std::string& path) { return path.empty() ? "" : " at " + path; }

  [[noreturn]] void WrongWireType(const std::string& path, int got, int expected) const {
    Malformed(path, "wire type " + WireTypeName(got) + " where the field has " + WireTypeName(expected));
  }

  // A repeated field appends, a singular one keeps the last value, as protobuf does.
  static void Store(std::optional<nlohmann::json>& slot, const FieldSpec& field, nlohmann::json value) {
    if (!field.repeated) {
      slot = std::move(value);
      return;
    }
    if (!slot) {
      slot = nlohmann::json::array();
    }
    slot->push_back(std::move(value));
  }

  nlohmann::json Scalar(const FieldSpec& field, std::optional<std::uint64_t> raw, const std::string& path) const {
    if (!raw) {
      Malformed(path, "a varint is truncated or longer than 10 bytes");
    }
    if (field.kind == Kind::kBool) {
      return *raw != 0;
    }
    // Negative int32 and int64 values are ten-byte two's-complement varints.
    const auto value = static_cast<std::int64_t>(*raw);
    if (field.kind == Kind::kInt32 && (value < INT32_MIN || value > INT32_MAX)) {
      Malformed(path, std::to_string(value) + " does not fit the field's int32");
    }
    return value;
  }

  // A map<string, V> entry: key 1, value 2.
  void MapEntry(std::optional<nlohmann::json>& slot, const FieldSpec& field, std::string_view entry,
                const std::string& path) const {
    std::string key;
    nlohmann::json value = field.kind == Kind::kQuantityMap ? nlohmann::json("0") : nlohmann::json("");
    WireReader reader(entry);
    while (!reader.AtEnd()) {
      const std::optional<std::uint32_t> tag = reader.Tag();
      if (!tag) {
        Malformed(path, "a map entry's tag is truncated or names field 0");
      }
      const int number = WireFormatLite::GetTagFieldNumber(*tag);
      const int wire_type = WireFormatLite::GetTagWireType(*tag);
      if (number != 1 && number != 2) {
        Malformed(path,
                  "a map entry has field " + std::to_string(number) + "; entries have only key (1) and value (2)");
      }
      if (wire_type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        WrongWireType(path, wire_type, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
      }
      const std::string_view payload = Payload(reader, path);
      if (number == 1) {
        key = Text(payload, path);
      } else if (field.kind == Kind::kStringMap) {
        value = Text(payload, path + "[" + key + "]");
      } else if (field.kind == Kind::kBytesMap) {
        value = Base64(payload);
      } else {
        value = QuantityValue(payload, path);
      }
    }
    if (!slot) {
      slot = nlohmann::json::object();
    }
    (*slot)[key] = std::move(value);
  }

  // The JSON of a length-delimited field that holds a message.
  nlohmann::json Nested(const FieldSpec& field, std::string_view bytes, const std::string& path, int depth) const {
    switch (field.kind) {
      case Kind::kMessage:
        return Message(bytes, *field.message, path, depth);
      case Kind::kTime:
      case Kind::kMicroTime:
        return TimeValue(bytes, field.kind == Kind::kMicroTime, path);
      case Kind::kQuantity:
        return QuantityValue(bytes, path);
      case Kind::kIntOrString:
        return IntOrStringValue(bytes, path);
      case Kind::kRawJson:
        return RawJsonValue(bytes, path);
      default:
        throw InternalError("devcluster's protobuf table gives " + path + " no message to decode");
    }
  }

  // The value of an absent field that is always written: Go's zero value in JSON.
  nlohmann::json Zero(const FieldSpec& field, const std::string& path, int depth) const {
    if (field.repeated || field.kind == Kind::kStringMap || field.kind == Kind::kBytesMap ||
        field.kind == Kind::kQuantityMap) {
      return nullptr;  // a nil slice or map
    }
    switch (field.kind) {
      case Kind::kString:
        return "";
      case Kind::kBool:
        return false;
      case Kind::kInt32:
      case Kind::kInt64:
        return 0;
      default:
        return Nested(field, "", path, depth + 1);
    }
  }

  // metav1.Time keeps whole seconds (its protobuf decoder drops nanos); MicroTime keeps microseconds.
  nlohmann::json TimeValue(std::string_view bytes, bool micro, const std::string& path) const {
    if (bytes.empty()) {
      return nullptr;  // the zero time
    }
    const nlohmann::json parts = Message(bytes, kTimestamp, path, 0);
    const std::int64_t seconds = parts["seconds"].get<std::int64_t>();
    const std::int64_t nanos = parts["nanos"].get<std::int64_t>();
    if (nanos < 0 || nanos > 999999999) {
      Malformed(path, "nanos " + std::to_string(nanos) + " is outside 0..999999999");
    }
    if (seconds == kMinSeconds && (!micro || nanos == 0)) {
      return nullptr;  // Go's zero time, written as null
    }
    if (seconds < kMinSeconds || seconds > kMaxSeconds) {
      Malformed(path, "seconds " + std::to_string(seconds) + " is outside the years 0001 to 9999");
    }
    return Rfc3339(seconds, micro ? std::optional<int>(static_cast<int>(nanos / 1000)) : std::nullopt);
  }

  nlohmann::json QuantityValue(std::string_view bytes, const std::string& path) const {
    const std::string text = Message(bytes, kQuantity, path, 0)["string"].get<std::string>();
    if (text.empty()) {
      return "0";  // Quantity's zero value
    }
    if (const std::optional<std::string> error = QuantityError(text)) {
      Malformed(path, "quantity \"" + text + "\": " + *error);
    }
    return text;
  }

  nlohmann::json IntOrStringValue(std::string_view bytes, const std::string& path) const {
    const nlohmann::json parts = Message(bytes, kIntOrString, path, 0);
    const std::int64_t type = parts["type"].get<std::int64_t>();
    if (type == 0) {
      return parts["intVal"];
    }
    if (type == 1) {
      return parts["strVal"];
    }
    Malformed(path, "IntOrString type " + std::to_string(type) + " is neither 0 (int) nor 1 (string)");
  }

  nlohmann::json RawJsonValue(std::string_view bytes, const std::string& path) const {
    const std::string raw = Message(bytes, kFieldsV1, path, 0)["Raw"].get<std::string>();
    if (raw.empty()) {
      return nullptr;
    }
    try {
      return nlohmann::json::parse(raw);
    } catch (const nlohmann::json::parse_error& e) {
      Malformed(path, std::string("it does not hold JSON: ") + e.what());
    }
  }

  std::string kind_;
};

const DecodableKind* FindDecodable(std::string_view api_version, std::string_view kind) {
  for (const DecodableKind& entry : kDecodableKinds) {
    if (entry.api_version == api_version && entry.kind == kind) {
      return &entry;
    }
  }
  return nullptr;
}

// A body's runtime.Unknown envelope: the TypeMeta it names ("" where it leaves one out) and the
// object's message.
struct Envelope {
  std::string api_version;
  std::string kind;
  std::string_view raw;
};

Envelope ReadEnvelope(std::string_view body, const Decoder& decoder) {
  if (body.size() < kMagic.size() || body.substr(0, kMagic.size()) != kMagic) {
    throw BadRequest("a " + std::string(kProtobufMediaType) +
                     " body must start with the 4 bytes \"k8s\\x00\", then a runtime.Unknown envelope");
  }
  if (body.size() > INT_MAX / 2) {
    throw BadRequest("the protobuf body is too large to decode");
  }
  // runtime.Unknown: typeMeta 1, raw 2, contentEncoding 3, contentType 4.
  nlohmann::json type_meta = {{"apiVersion", ""}, {"kind", ""}};
  Envelope envelope;
  std::string content_encoding;
  std::string content_type;
  WireReader reader(body.substr(kMagic.size()));
  while (!reader.AtEnd()) {
    const std::optional<std::uint32_t> tag = reader.Tag();
    if (!tag) {
      decoder.Malformed("", "the envelope's field tag is truncated or names field 0");
    }
    const int number = WireFormatLite::GetTagFieldNumber(*tag);
    if (number < 1 || number > 4) {
      throw BadRequest("the protobuf envelope (k8s.io.apimachinery.pkg.runtime.Unknown) has field " +
                       std::to_string(number) + ", which it does not have in Kubernetes 1.32");
    }
    if (WireFormatLite::GetTagWireType(*tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      decoder.Malformed("", "field " + std::to_string(number) + " of the envelope is not length-delimited");
    }
    const std::string_view payload = decoder.Payload(reader, "");
    if (number == 1) {
      type_meta = decoder.Message(payload, kTypeMeta, "", 0);
    } else if (number == 2) {
      envelope.raw = payload;
    } else if (number == 3) {
      content_encoding = decoder.Text(payload, "");
    } else {
      content_type = decoder.Text(payload, "");
    }
  }
  if (!content_encoding.empty()) {
    throw BadRequest("the protobuf envelope's contentEncoding \"" + content_encoding +
                     "\" is not supported; the object must be sent unencoded");
  }
  if (!content_type.empty() && content_type != kProtobufMediaType) {
    throw BadRequest("the protobuf envelope's contentType \"" + content_type + "\" is not " +
                     std::string(kProtobufMediaType));
  }
  envelope.api_version = type_meta["apiVersion"].get<std::string>();
  envelope.kind = type_meta["kind"].get<std::string>();
  return envelope;
}

// An envelope without a kind takes the expected one; another kind is a 400.
void RequireKind(Envelope& envelope, std::string_view kind) {
  if (envelope.kind.empty()) {
    envelope.kind = kind;
  }
  if (envelope.kind != kind) {
    throw BadRequest("the kind in the data (" + envelope.kind + ") does not match the expected kind (" +
                     std::string(kind) + ")");
  }
}

}  // namespace

std::vector<std::string> ProtobufDecodableKinds() {
  std::vector<std::string> kinds;
  for (const DecodableKind& entry : kDecodableKinds) {
    kinds.push_back(std::string(entry.api_version) + " " + std::string(entry.kind));
  }
  return kinds;
}

nlohmann::json DecodeProtobufObject(std::string_view body, std::string_view api_version, std::string_view kind) {
  const Decoder decoder{std::string(kind)};
  Envelope envelope = ReadEnvelope(body, decoder);
  // As kube-apiserver does, an envelope without apiVersion or kind takes the URL's.
  if (envelope.api_version.empty()) {
    envelope.api_version = api_version;
  }
  if (envelope.api_version != api_version) {
    throw BadRequest("the API version in the data (" + envelope.api_version +
                     ") does not match the expected API version (" + std::string(api_version) + ")");
  }
  RequireKind(envelope, kind);
  const DecodableKind* decodable = FindDecodable(api_version, kind);
  if (!decodable) {
    std::string known;
    for (const std::string& entry : ProtobufDecodableKinds()) {
      known += (known.empty() ? "" : ", ") + entry;
    }
    throw ApiError(415, "UnsupportedMediaType",
                   "devcluster does not decode " + std::string(kind) + " (" + std::string(api_version) + ") from " +
                       std::string(kProtobufMediaType) + "; it decodes these kinds as protobuf: " + known +
                       "; send the object as application/json, which it always accepts");
  }
  nlohmann::json object = decoder.Message(envelope.raw, *decodable->message, "", 0);
  object["apiVersion"] = envelope.api_version;
  object["kind"] = envelope.kind;
  return object;
}

nlohmann::json DecodeProtobufEviction(std::string_view body) {
  const Decoder decoder{"Eviction"};
  Envelope envelope = ReadEnvelope(body, decoder);
  if (envelope.api_version.empty()) {
    envelope.api_version = "policy/v1";
  }
  // The eviction subresource accepts both versions (eviction.h), in protobuf as in JSON.
  if (envelope.api_version != "policy/v1" && envelope.api_version != "policy/v1beta1") {
    throw BadRequest("the API version in the data (" + envelope.api_version +
                     ") does not match the expected API version (policy/v1)");
  }
  RequireKind(envelope, "Eviction");
  nlohmann::json eviction = decoder.Message(envelope.raw, kEviction, "", 0);
  eviction["apiVersion"] = envelope.api_version;
  eviction["kind"] = envelope.kind;
  return eviction;
}

nlohmann::json DecodeProtobufDeleteOptions(std::string_view body) {
  const Decoder decoder{"DeleteOptions"};
  Envelope envelope = ReadEnvelope(body, decoder);
  RequireKind(envelope, "DeleteOptions");
  // The server registers DeleteOptions unversioned, so any apiVersion in the envelope decodes.
  nlohmann::json options = decoder.Message(envelope.raw, kDeleteOptions, "", 0);
  if (!envelope.api_version.empty()) {
    options["apiVersion"] = envelope.api_version;
  }
  options["kind"] = envelope.kind;
  return options;
}

}  // namespace ringleader::devcluster
