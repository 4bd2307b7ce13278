package io.handoff.dist;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodListBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The pods endpoint of a Kubernetes API, on fabric8's mock web server: a list, and watches from a resource version that
 * answer the events since then (or, when there are none, a bookmark after 200 ms) and end, as the API server's
 * watches end. The test changes pods; each change is one event with the next resource version.
 */
final class FakePodsApi
        extends Dispatcher
{
    static final String NAMESPACE = "serving";
    private static final String PODS = "/api/v1/namespaces/" + NAMESPACE + "/pods?labelSelector=app.kubernetes.io%2Fpart-of%3Dhandoff";
    private static final Pattern WATCH_FROM = Pattern.compile("&watch=true&resourceVersion=([0-9]+)&allowWatchBookmarks=true$");
    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

    private final Map<String, Pod> pods = new LinkedHashMap<>();
    private final List<String> events = new ArrayList<>(); // events.get(i) has resource version i + 1
    private int resourceVersion;

    /** A handoff pod of {@code role} whose HTTP API is 127.0.0.1:{@code port}. */
    static PodBuilder pod(String name, String role, int port, boolean ready)
    {
        return new PodBuilder()
                .withNewMetadata().withName(name).withNamespace(NAMESPACE).withUid("uid-" + name)
                .withLabels(Map.of("app.kubernetes.io/part-of", "handoff", "handoff.io/role", role)).endMetadata()
                .withNewSpec().addNewContainer().withName("engine").addNewPort().withName("http").withContainerPort(port).endPort().endContainer().endSpec()
                .withNewStatus().withPodIP("127.0.0.1")
                .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition().endStatus();
    }

    synchronized void put(Pod pod)
    {
        String type = pods.containsKey(pod.getMetadata().getName()) ? "MODIFIED" : "ADDED";
        pod.getMetadata().setResourceVersion(Integer.toString(++resourceVersion));
        pods.put(pod.getMetadata().getName(), pod);
        events.add("{\"type\":\"" + type + "\",\"object\":" + SERIALIZATION.asJson(pod) + "}\n");
    }

    synchronized void delete(String name)
    {
        Pod pod = pods.remove(name);
        pod.getMetadata().setResourceVersion(Integer.toString(++resourceVersion));
        events.add("{\"type\":\"DELETED\",\"object\":" + SERIALIZATION.asJson(pod) + "}\n");
    }

    @Override
    public synchronized MockResponse dispatch(RecordedRequest request)
    {
        String path = request.getPath();
        if (path.equals(PODS)) {
            String list = SERIALIZATION.asJson(new PodListBuilder().withNewMetadata().withResourceVersion(Integer.toString(resourceVersion)).endMetadata()
                    .withItems(List.copyOf(pods.values())).build());
            return new MockResponse().setResponseCode(200).setBody(list);
        }
        Matcher watch = path.startsWith(PODS) ? WATCH_FROM.matcher(path.substring(PODS.length())) : null;
        if (watch == null || !watch.matches()) {
            return new MockResponse().setResponseCode(404).setBody("{\"kind\":\"Status\",\"code\":404}");
        }
        int from = Integer.parseInt(watch.group(1));
        if (from < resourceVersion) {
            return new MockResponse().setResponseCode(200).setBody(String.join("", events.subList(from, resourceVersion)));
        }
        String bookmark = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\""
                + resourceVersion + "\"}}}\n";
        return new MockResponse().setResponseCode(200).setBody(bookmark).setBodyDelay(200, TimeUnit.MILLISECONDS);
    }
}
