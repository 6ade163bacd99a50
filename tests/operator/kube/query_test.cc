// Query strings and resource paths.
#include "operator/kube/query.h"

#include <gtest/gtest.h>

#include "operator/kube/resource.h"

namespace ringleader::kube {
namespace {

TEST(QueryTest, SelectorsArePercentEncoded) {
  Query query;
  query.Add("labelSelector", "app=x,tier in (a,b)").Add("fieldSelector", "metadata.name=a~b");
  EXPECT_EQ(query.ToString(),
            "?labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&fieldSelector=metadata.name%3Da~b");
}

TEST(QueryTest, OptionalValuesAreLeftOut) {
  Query query;
  query.AddIfSet("continue", "").AddIfPositive("limit", 0).AddIfTrue("watch", false);
  EXPECT_EQ(query.ToString(), "");
  query.AddIfSet("continue", "tok/+=").AddIfPositive("limit", 5).AddIfTrue("watch", true);
  EXPECT_EQ(query.ToString(), "?continue=tok%2F%2B%3D&limit=5&watch=true");
}

TEST(QueryTest, PercentEncodeEncodesUtf8BytesAndKeepsUnreserved) {
  EXPECT_EQ(PercentEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(PercentEncode("é/?#&"), "%C3%A9%2F%3F%23%26");
}

TEST(ResourcePathTest, CoreNamespacedObjectAndSubresource) {
  EXPECT_EQ(ResourcePath(Pods(), "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(ResourcePath(Pods(), "ns"), "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(ResourcePath(Pods(), ""), "/api/v1/pods");
}

TEST(ResourcePathTest, GroupedAndClusterScoped) {
  EXPECT_EQ(ResourcePath(TrainingJobs(), "a", "j"),
            "/apis/ringleader.dev/v1alpha1/namespaces/a/trainingjobs/j");
  EXPECT_EQ(ResourcePath(CustomResourceDefinitions(), "ignored", "x.y"),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y");
  EXPECT_EQ(TrainingJobs().ApiVersion(), "ringleader.dev/v1alpha1");
  EXPECT_EQ(Pods().ApiVersion(), "v1");
}

}  // namespace
}  // namespace ringleader::kube
