package io.handoff.cluster;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * deploy/kubernetes checked offline (no cluster is reachable here): each overlay rendered as kustomize renders what it
 * uses, every object read into fabric8's typed Kubernetes model with nothing left over (no field the schema lacks, no
 * value of the wrong type), and the properties the deployment depends on: the router's discovery picks the prefill
 * and decode pods, probes on /health, the grace period covers the drain, the ConfigMap's HOCON selects Kubernetes
 * discovery. What a cluster would still decide (admission, image pulls, scheduling) is not proven here.
 */
class KubernetesManifestsTest
{
    private static final Path OVERLAYS = Path.of(System.getProperty("handoff.deploy.dir", "../deploy/kubernetes")).resolve("overlays");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, Map<String, Integer>> REPLICAS = Map.of(
            "1p1d", Map.of("prefill", 1, "decode", 1, "router", 1),
            "xpyd", Map.of("prefill", 2, "decode", 3, "router", 1));

    @ParameterizedTest
    @ValueSource(strings = {"1p1d", "xpyd"})
    void everyObjectMatchesTheKubernetesSchemaExactly(String overlay)
            throws Exception
    {
        List<Map<String, Object>> objects = Kustomization.render(OVERLAYS.resolve(overlay));

        assertThat(objects).extracting(object -> object.get("kind")).contains("Namespace", "ConfigMap", "ServiceAccount", "Role", "RoleBinding",
                "Deployment", "Service");
        for (Map<String, Object> object : objects) {
            assertThat(schemaProblems(object)).isEmpty();
        }
    }

    @Test
    void theCheckCatchesAMisspelledFieldAWronglyTypedValueAndAnUnknownKind()
            throws Exception
    {
        List<Map<String, Object>> objects = Kustomization.documents(Path.of(getClass().getResource("/kubernetes-broken.yaml").toURI()));

        assertThat(objects).hasSize(3);
        assertThat(schemaProblems(objects.get(0))).singleElement().asString().contains("readinessprobe");
        assertThat(schemaProblems(objects.get(1))).singleElement().asString().contains("reads back otherwise");
        assertThat(schemaProblems(objects.get(2))).singleElement().asString().contains("not a kind");
    }

    @Test
    void theRendererRefusesWhatItDoesNotImplement()
            throws Exception
    {
        Path overlay = Path.of(getClass().getResource("/kubernetes-list-patch/kustomization.yaml").toURI()).getParent();

        assertThatThrownBy(() -> Kustomization.render(overlay)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("strategic merge of lists");
    }

    /** What is wrong with {@code object} against fabric8's typed model of the Kubernetes schema; empty when nothing. */
    private static List<String> schemaProblems(Map<String, Object> object)
            throws Exception
    {
        String json = JSON.writeValueAsString(object);
        Object typed = PodJson.SERIALIZATION.unmarshal(json);
        String name = object.get("kind") + " " + Kustomization.map(object.get("metadata"), "metadata").get("name");
        if (typed.getClass().getName().contains("Generic")) {
            return List.of(name + " is not a kind the Kubernetes model knows (" + object.get("apiVersion") + ")");
        }
        List<String> problems = new ArrayList<>();
        unknownFields(typed, name, problems, 0);
        if (problems.isEmpty() && !JSON.readTree(PodJson.SERIALIZATION.asJson(typed)).equals(JSON.readTree(json))) {
            problems.add(name + " reads back otherwise than written (a value of the wrong type was coerced): " + PodJson.SERIALIZATION.asJson(typed));
        }
        return problems;
    }

    @ParameterizedTest
    @ValueSource(strings = {"1p1d", "xpyd"})
    void theRouterDiscoversThePrefillAndDecodePodsAndTheyDrainBeforeTheyStop(String overlay)
            throws Exception
    {
        Map<String, HasMetadata> objects = typed(Kustomization.render(OVERLAYS.resolve(overlay)));
        ConfigMap configMap = (ConfigMap) objects.get("ConfigMap/handoff-config");
        Config config = ConfigFactory.parseString(configMap.getData().get("handoff.conf")).resolve();
        ClusterConfig cluster = ClusterConfig.from(config.withFallback(ConfigFactory.parseResources("reference.conf")));
        assertThat(cluster.discovery()).isEqualTo(Discovery.KUBERNETES);
        long gracePeriod = config.getDuration("handoff.server.grace-period").toSeconds();
        int port = config.getInt("handoff.server.port");

        for (String role : List.of("prefill", "decode", "router")) {
            Deployment deployment = (Deployment) objects.get("Deployment/handoff-" + role);
            assertThat(deployment.getSpec().getReplicas()).as(role + " replicas").isEqualTo(REPLICAS.get(overlay).get(role));
            Map<String, String> labels = deployment.getSpec().getTemplate().getMetadata().getLabels();
            assertThat(labels).containsAllEntriesOf(deployment.getSpec().getSelector().getMatchLabels());
            assertThat(selects(cluster.kubernetes().labelSelector(), labels)).as(role + " pods are picked by the label selector").isTrue();
            assertThat(labels).containsEntry(cluster.kubernetes().roleLabel(), role);
            PodSpec pod = deployment.getSpec().getTemplate().getSpec();
            Container container = pod.getContainers().getFirst();
            assertThat(container.getPorts()).anySatisfy(p -> {
                assertThat(p.getName()).isEqualTo(cluster.kubernetes().portName());
                assertThat(p.getContainerPort()).isEqualTo(port);
            });
            for (Probe probe : List.of(container.getReadinessProbe(), container.getLivenessProbe())) {
                assertThat(probe.getHttpGet().getPath()).isEqualTo("/health");
                assertThat(probe.getHttpGet().getPort().getStrVal()).isEqualTo(cluster.kubernetes().portName());
            }
            List<String> preStop = container.getLifecycle().getPreStop().getExec().getCommand();
            assertThat(preStop).hasSize(2).first().isEqualTo("sleep");
            long sleep = Long.parseLong(preStop.get(1));
            assertThat(sleep).isBetween(2L, 15L);
            assertThat(pod.getTerminationGracePeriodSeconds()).as(role + ": the preStop sleep and the server's grace period fit in the pod's")
                    .isGreaterThan(sleep + gracePeriod);
            assertThat(container.getResources().getRequests()).containsKeys("cpu", "memory");
            assertThat(container.getArgs()).as(role + " is a " + role).first().isEqualTo(role.equals("router") ? "router" : "serve");
            assertThat(container.getArgs()).doesNotContain("--prefill", "--decode");
            assertThat(container.getArgs()).containsSubsequence("--config", mountedFile(pod, container, "config"));
            assertThat(mountedFile(pod, container, "run")).isEqualTo(Path.of(config.getString("handoff.security.cluster-secret-file")).getParent().toString());
            Volume secret = pod.getVolumes().stream().filter(v -> v.getName().equals("cluster-secret")).findFirst().orElseThrow();
            assertThat(secret.getSecret().getSecretName()).isEqualTo("handoff-cluster-secret");
            assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
            boolean needsApi = role.equals("router");
            assertThat(pod.getServiceAccountName()).isEqualTo(needsApi ? "handoff-router" : "handoff-server");
        }
        Service service = (Service) objects.get("Service/handoff-router");
        assertThat(service.getSpec().getSelector()).containsEntry(cluster.kubernetes().roleLabel(), "router");
        assertThat(service.getSpec().getPorts().getFirst().getTargetPort().getStrVal()).isEqualTo("http");
        RoleBinding binding = (RoleBinding) objects.get("RoleBinding/handoff-router-pod-reader");
        assertThat(binding.getSubjects()).singleElement().satisfies(s -> {
            assertThat(s.getKind()).isEqualTo("ServiceAccount");
            assertThat(s.getName()).isEqualTo("handoff-router");
        });
        Role role = (Role) objects.get("Role/" + binding.getRoleRef().getName());
        assertThat(role.getRules()).singleElement().satisfies(rule -> {
            assertThat(rule.getResources()).containsExactly("pods");
            assertThat(rule.getVerbs()).containsExactlyInAnyOrder("get", "list", "watch");
        });
    }

    /** The folder {@code volume} is mounted at in {@code container} (a subPath mount: the file's path). */
    private static String mountedFile(PodSpec pod, Container container, String volume)
    {
        assertThat(pod.getVolumes()).extracting(Volume::getName).contains(volume);
        VolumeMount mount = container.getVolumeMounts().stream().filter(m -> m.getName().equals(volume)).findFirst().orElseThrow();
        return mount.getMountPath();
    }

    /** Whether an equality-based selector ({@code k=v,k2=v2}, the only form used here) picks {@code labels}. */
    private static boolean selects(String selector, Map<String, String> labels)
    {
        for (String term : selector.split(",")) {
            String[] parts = term.strip().split("=", -1);
            assertThat(parts).as("selector term '" + term + "' is k=v").hasSize(2);
            if (!parts[1].equals(labels.get(parts[0]))) {
                return false;
            }
        }
        return true;
    }

    private static Map<String, HasMetadata> typed(List<Map<String, Object>> objects)
            throws Exception
    {
        Map<String, HasMetadata> typed = new HashMap<>();
        for (Map<String, Object> object : objects) {
            HasMetadata resource = PodJson.SERIALIZATION.unmarshal(JSON.writeValueAsString(object));
            typed.put(resource.getKind() + "/" + resource.getMetadata().getName(), resource);
        }
        return typed;
    }

    /** Collects every field the typed model did not know (its additionalProperties), with where it was. */
    private static void unknownFields(Object value, String path, List<String> found, int depth)
            throws Exception
    {
        if (value == null || depth > 40) {
            return;
        }
        if (value instanceof Collection<?> collection) {
            int i = 0;
            for (Object element : collection) {
                unknownFields(element, path + "[" + i++ + "]", found, depth + 1);
            }
            return;
        }
        if (value instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                unknownFields(entry.getValue(), path + "." + entry.getKey(), found, depth + 1);
            }
            return;
        }
        if (!value.getClass().getName().startsWith("io.fabric8.")) {
            return;
        }
        for (Method getter : value.getClass().getMethods()) {
            if (getter.getParameterCount() != 0 || Modifier.isStatic(getter.getModifiers()) || !getter.getName().startsWith("get")
                    || getter.getDeclaringClass() == Object.class) {
                continue;
            }
            Object field = getter.invoke(value);
            if (getter.getName().equals("getAdditionalProperties")) {
                if (field instanceof Map<?, ?> extra && !extra.isEmpty()) {
                    found.add(path + ": unknown fields " + extra.keySet());
                }
                continue;
            }
            unknownFields(field, path + "." + getter.getName().substring(3), found, depth + 1);
        }
    }
}
