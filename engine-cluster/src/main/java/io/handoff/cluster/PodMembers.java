package io.handoff.cluster;

import com.fasterxml.jackson.databind.JsonNode;

import java.net.InetAddress;
import java.net.URI;
import java.util.Optional;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * What a pod, as the Kubernetes API describes it, is to membership: a {@link Member} when its role label says prefill
 * or decode, it has an IP and it is Ready (draining once it is being deleted); nothing otherwise. Every field is
 * checked before use: a pod that does not parse is an {@link IllegalArgumentException} saying why.
 *
 * <p>The member's incarnation is left empty: the pod's uid and restart count name the container, not the server
 * process's incarnation (a random id per start, in its {@code /bootstrap}), which the router then reads from the server
 * as under static discovery. A restarted container shows as its pod turning not Ready (no member) and Ready again.
 */
final class PodMembers
{
    static final String COMPATIBILITY_ANNOTATION = "handoff.io/compatibility";
    static final String CAPACITY_ANNOTATION = "handoff.io/capacity";
    private static final Pattern IP = Pattern.compile("[0-9A-Fa-f.:]{2,45}");
    private static final Pattern DIGITS = Pattern.compile("[0-9]{1,18}");

    private final String roleLabel;
    private final String portName;

    PodMembers(String roleLabel, String portName)
    {
        this.roleLabel = requireNonNull(roleLabel, "roleLabel is null");
        this.portName = requireNonNull(portName, "portName is null");
    }

    /** The pod's name ({@code metadata.name}), which is also its member id. */
    static String name(JsonNode pod)
    {
        JsonNode name = pod.path("metadata").path("name");
        if (!name.isTextual() || name.asText().isEmpty() || name.asText().length() > Member.MAX_TOKEN) {
            throw new IllegalArgumentException("a pod without a valid metadata.name");
        }
        return name.asText();
    }

    /** The member {@code pod} is, or empty when it is none (another role, no IP yet, not Ready). */
    Optional<Member> member(JsonNode pod)
    {
        String name = name(pod);
        JsonNode metadata = pod.path("metadata");
        Optional<MemberRole> role = MemberRole.parse(metadata.path("labels").path(roleLabel).asText(""));
        if (role.isEmpty()) {
            return Optional.empty();
        }
        JsonNode status = pod.path("status");
        boolean deleting = !metadata.path("deletionTimestamp").isMissingNode() && !metadata.path("deletionTimestamp").isNull();
        String ip = status.path("podIP").asText("");
        if (ip.isEmpty() || !(deleting || ready(status))) {
            return Optional.empty();
        }
        int port = port(containerWithPort(pod, name), name);
        JsonNode annotations = metadata.path("annotations");
        String compatibility = annotations.path(COMPATIBILITY_ANNOTATION).asText("");
        long capacity = capacity(annotations.path(CAPACITY_ANNOTATION), name);
        URI http = URI.create("http://" + host(ip, name) + ":" + port);
        return Optional.of(new Member(name, role.get(), "", http, compatibility, capacity, deleting));
    }

    private static boolean ready(JsonNode status)
    {
        for (JsonNode condition : status.path("conditions")) {
            if ("Ready".equals(condition.path("type").asText()) && "True".equals(condition.path("status").asText())) {
                return true;
            }
        }
        return false;
    }

    private JsonNode containerWithPort(JsonNode pod, String name)
    {
        for (JsonNode container : pod.path("spec").path("containers")) {
            for (JsonNode port : container.path("ports")) {
                if (portName.equals(port.path("name").asText())) {
                    return container;
                }
            }
        }
        throw new IllegalArgumentException("pod " + name + " has no container port named '" + portName + "' (handoff.cluster.kubernetes.port-name)");
    }

    private int port(JsonNode container, String name)
    {
        for (JsonNode port : container.path("ports")) {
            if (portName.equals(port.path("name").asText())) {
                JsonNode number = port.path("containerPort");
                if (!number.isInt() || number.asInt() < 1 || number.asInt() > 65535) {
                    throw new IllegalArgumentException("pod " + name + " has container port '" + portName + "' with a containerPort that is not 1..65535");
                }
                return number.asInt();
            }
        }
        throw new IllegalStateException("containerWithPort found the port");
    }

    private static long capacity(JsonNode annotation, String name)
    {
        if (annotation.isMissingNode()) {
            return 0;
        }
        if (!annotation.isTextual() || !DIGITS.matcher(annotation.asText()).matches()) {
            throw new IllegalArgumentException("pod " + name + " has annotation " + CAPACITY_ANNOTATION + " that is not a number of KV pages");
        }
        return Long.parseLong(annotation.asText());
    }

    /** The pod IP as a URL host: validated as an IP literal, never resolved, IPv6 in brackets. */
    private static String host(String ip, String name)
    {
        if (!IP.matcher(ip).matches()) {
            throw new IllegalArgumentException("pod " + name + " has a status.podIP that is not an IP address");
        }
        try {
            InetAddress.ofLiteral(ip);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("pod " + name + " has a status.podIP that is not an IP address");
        }
        return ip.contains(":") ? "[" + ip + "]" : ip;
    }
}
