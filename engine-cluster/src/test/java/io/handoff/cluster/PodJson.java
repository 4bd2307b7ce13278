package io.handoff.cluster;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodListBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/** Pods, pod lists and watch events as the Kubernetes API sends them, built with fabric8's typed model. */
final class PodJson
{
    static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    static final String NAMESPACE = "serving";
    static final String PODS = "/api/v1/namespaces/" + NAMESPACE + "/pods?labelSelector=app.kubernetes.io%2Fpart-of%3Dhandoff";

    private PodJson() {}

    /** A handoff pod: role label, a container "engine" with port "http" 30000, Ready as given. */
    static PodBuilder pod(String name, String role, boolean ready, int restarts, String resourceVersion)
    {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put("app.kubernetes.io/part-of", "handoff");
        labels.put("handoff.io/role", role);
        return new PodBuilder()
                .withNewMetadata().withName(name).withNamespace(NAMESPACE).withUid("uid-" + name).withResourceVersion(resourceVersion)
                .withLabels(labels).endMetadata()
                .withNewSpec().addNewContainer().withName("engine").withImage("handoff:0.1.0")
                .addNewPort().withName("http").withContainerPort(30000).endPort().endContainer().endSpec()
                .withNewStatus().withPhase(ready ? "Running" : "Pending").withPodIP("10.1.0." + (Math.abs(name.hashCode()) % 200 + 1))
                .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition()
                .addNewContainerStatus().withName("engine").withRestartCount(restarts).withReady(ready).endContainerStatus()
                .endStatus();
    }

    static String ip(String name)
    {
        return "10.1.0." + (Math.abs(name.hashCode()) % 200 + 1);
    }

    static String list(String resourceVersion, Pod... pods)
    {
        return SERIALIZATION.asJson(new PodListBuilder().withNewMetadata().withResourceVersion(resourceVersion).endMetadata()
                .withItems(Arrays.asList(pods)).build());
    }

    static String event(String type, Pod pod)
    {
        return "{\"type\":\"" + type + "\",\"object\":" + SERIALIZATION.asJson(pod) + "}\n";
    }

    static String event(String type, String rawObject)
    {
        return "{\"type\":\"" + type + "\",\"object\":" + rawObject + "}\n";
    }

    static String bookmark(String resourceVersion)
    {
        return event("BOOKMARK", "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" + resourceVersion + "\"}}");
    }

    static String gone()
    {
        return event("ERROR", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version\","
                + "\"reason\":\"Expired\",\"code\":410}");
    }

    /** A watch's body: the events, one a line. */
    static String stream(String... events)
    {
        return String.join("", events);
    }

    static String watch(String resourceVersion)
    {
        return PODS + "&watch=true&resourceVersion=" + resourceVersion + "&allowWatchBookmarks=true";
    }
}
