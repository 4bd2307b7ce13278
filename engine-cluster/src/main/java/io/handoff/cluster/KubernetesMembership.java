package io.handoff.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * The pods a label selector picks, followed through the Kubernetes API: a list, then a watch from the list's resource
 * version, re-watched from the last one seen when the API ends it, listed afresh when that version is gone (410). While
 * the API cannot be reached the last view is handed over marked stale and the API is tried again every
 * {@code retry-interval}; once it answers, a fresh list replaces it. One thread follows the watch.
 */
final class KubernetesMembership
        implements Membership
{
    private static final Logger log = LogManager.getLogger(KubernetesMembership.class);
    private static final int MAX_MEMBERS = 10_000;
    private static final Pattern RESOURCE_VERSION = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    private final ClusterConfig.Kubernetes config;
    private final Map<String, String> env;
    private final Path serviceAccount;
    private final PodMembers pods;
    private final CountDownLatch closing = new CountDownLatch(1);
    /** Members by pod name; touched by the following thread only (and by start before it runs). */
    private final Map<String, Member> members = new TreeMap<>();
    // pods whose server reports another role than their label (POST /admin/role switched it), by pod name
    private final Map<String, MemberRole> reportedRoles = new java.util.concurrent.ConcurrentHashMap<>();
    /** Pods already warned about as malformed, so that a pod is warned about once, not on every event. */
    private final Set<String> warned = new HashSet<>();
    private volatile MembershipView current = MembershipView.of(List.of());
    private Consumer<MembershipView> listener;
    private volatile KubernetesApi api;
    private volatile Thread follower;
    private String resourceVersion = "";
    private boolean closed;

    KubernetesMembership(ClusterConfig.Kubernetes config)
    {
        this(config, System.getenv(), KubernetesApi.SERVICE_ACCOUNT);
    }

    /** With the environment and service account folder given, for tests (in a pod: the real ones). */
    KubernetesMembership(ClusterConfig.Kubernetes config, Map<String, String> env, Path serviceAccount)
    {
        this.config = requireNonNull(config, "config is null");
        this.env = Map.copyOf(requireNonNull(env, "env is null"));
        this.serviceAccount = requireNonNull(serviceAccount, "serviceAccount is null");
        this.pods = new PodMembers(config.roleLabel(), config.portName());
    }

    @Override
    public void start(Consumer<MembershipView> listener)
            throws IOException, InterruptedException
    {
        requireNonNull(listener, "listener is null");
        synchronized (this) {
            if (this.listener != null) {
                throw new IllegalStateException("kubernetes membership already started");
            }
            this.listener = listener;
            this.api = KubernetesApi.open(config, env, serviceAccount);
        }
        try {
            list(true);
        }
        catch (IOException e) {
            api.close();
            throw new IOException("cannot list the pods of " + api.describe() + ": " + e.getMessage(), e);
        }
        catch (InterruptedException | RuntimeException e) {
            api.close();
            throw e;
        }
        follower = Thread.ofPlatform().name("kubernetes-membership").daemon().start(this::follow);
        log.info("following {}", api.describe());
    }

    @Override
    public MembershipView current()
    {
        return current;
    }

    @Override
    public String describe()
    {
        KubernetesApi opened = api;
        return "kubernetes " + (opened == null ? config.labelSelector() : opened.describe());
    }

    @Override
    public void close()
    {
        synchronized (this) {
            closed = true;
        }
        closing.countDown();
        if (api != null) {
            api.close();
        }
        if (follower != null && follower != Thread.currentThread()) {
            follower.interrupt();
            try {
                follower.join(Duration.ofSeconds(10));
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void follow()
    {
        boolean relist = false;
        while (closing.getCount() > 0) {
            try {
                if (relist) {
                    list(false);
                    relist = false;
                }
                watch();
            }
            catch (KubernetesApi.ApiFailure e) {
                if (e.status == 410) {
                    log.info("resource version {} is gone from the Kubernetes API: listing the pods again", resourceVersion);
                    relist = true;
                }
                else {
                    relist = outage(e);
                }
            }
            catch (IOException | RuntimeException e) {
                relist = outage(e);
            }
            catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Hands over the last view marked stale, waits retry-interval; the next attempt lists afresh. */
    private boolean outage(Exception e)
    {
        if (closing.getCount() == 0) {
            return true;
        }
        if (current.stale().isEmpty()) {
            log.warn("lost the Kubernetes API ({}): keeping the last {} members, retrying every {}", e.getMessage(), current.members().size(),
                    config.retryInterval());
            publish(current.staleBecause("the Kubernetes API cannot be reached: " + e.getMessage()));
        }
        try {
            closing.await(config.retryInterval().toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    /** Lists the pods afresh; hands over the view when it differs from the last one, or always when {@code first}. */
    private void list(boolean first)
            throws IOException, InterruptedException
    {
        JsonNode list = api.listPods();
        JsonNode items = list.path("items");
        if (!items.isArray() && !items.isMissingNode() && !items.isNull()) {
            throw new IOException("the pod list's items is not an array");
        }
        members.clear();
        for (JsonNode pod : items) {
            update(pod);
        }
        resourceVersion = resourceVersion(list);
        MembershipView view = MembershipView.of(List.copyOf(members.values()));
        if (first || !view.equals(current)) {
            publish(view);
        }
    }

    private void watch()
            throws IOException, InterruptedException
    {
        long started = System.nanoTime();
        int events = 0;
        try (KubernetesApi.Watch watch = api.watchPods(resourceVersion)) {
            for (Optional<JsonNode> event = watch.next(); event.isPresent(); event = watch.next()) {
                events++;
                apply(event.get());
            }
        }
        // A watch the API ends at once, again and again, must not spin: wait before the next one.
        if (events == 0 && System.nanoTime() - started < config.retryInterval().toNanos()) {
            closing.await(config.retryInterval().toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private void apply(JsonNode event)
            throws IOException
    {
        String type = event.path("type").asText("");
        JsonNode object = event.path("object");
        switch (type) {
            case "ADDED", "MODIFIED" -> update(object);
            case "DELETED" -> {
                String name = PodMembers.name(object);
                members.remove(name);
                warned.remove(name);
                reportedRoles.remove(name);
            }
            case "BOOKMARK" -> {
            }
            case "ERROR" -> {
                int code = object.path("code").asInt(0);
                throw new KubernetesApi.ApiFailure(code, "the pod watch ended with an error: HTTP " + code + " "
                        + KubernetesApi.printable(object.path("message").asText("")));
            }
            default -> throw new IOException("the pod watch sent an event of unknown type '" + KubernetesApi.printable(type) + "'");
        }
        resourceVersion = resourceVersion(object);
        MembershipView view = MembershipView.of(List.copyOf(members.values()));
        if (!view.equals(current)) {
            publish(view);
        }
    }

    /** Takes in one pod: adds, replaces or removes its member; a malformed pod is skipped with one warning. */
    private void update(JsonNode pod)
    {
        String name;
        try {
            name = PodMembers.name(pod);
        }
        catch (IllegalArgumentException e) {
            log.warn("skipping a pod from the Kubernetes API: {}", e.getMessage());
            return;
        }
        Optional<Member> member;
        try {
            member = pods.member(pod);
            warned.remove(name);
        }
        catch (IllegalArgumentException e) {
            if (warned.size() > MAX_MEMBERS) {
                warned.clear();
            }
            if (warned.add(name)) {
                log.warn("skipping pod {}: {}", name, e.getMessage());
            }
            members.remove(name);
            return;
        }
        if (member.isEmpty()) {
            members.remove(name);
        }
        else if (members.containsKey(name) || members.size() < MAX_MEMBERS) {
            members.put(name, withReportedRole(member.get()));
        }
        else if (warned.add(name)) {
            log.warn("skipping pod {}: more than {} members", name, MAX_MEMBERS);
        }
    }

    /**
     * A pod's label names the role it started in; a role switch ({@code POST /admin/role}) changes what the server reports,
     * not the label, so the reported role stands for the pod from then on (until the pod goes).
     */
    @Override
    public boolean roleReported(String memberId, MemberRole role)
    {
        synchronized (this) {
            Member member = current.members().stream().filter(m -> m.id().equals(memberId)).findFirst().orElse(null);
            if (closed || member == null || member.role() == role) {
                return false;
            }
            reportedRoles.put(memberId, role);
            List<Member> next = current.members().stream().map(this::withReportedRole).toList();
            current = new MembershipView(next, current.stale());
            listener.accept(current);
            return true;
        }
    }

    private Member withReportedRole(Member member)
    {
        MemberRole reported = reportedRoles.get(member.id());
        return reported == null || reported == member.role() ? member
                : new Member(member.id(), reported, member.incarnation(), member.http(), member.compatibility(), member.capacity(), member.draining());
    }

    private String resourceVersion(JsonNode object)
            throws IOException
    {
        String version = object.path("metadata").path("resourceVersion").asText("");
        if (!RESOURCE_VERSION.matcher(version).matches()) {
            throw new IOException("the Kubernetes API sent a resourceVersion that is not 1 to 64 of [A-Za-z0-9._-]: '" + KubernetesApi.printable(version) + "'");
        }
        return version;
    }

    private void publish(MembershipView view)
    {
        synchronized (this) {
            if (closed) {
                return;
            }
            current = view;
            listener.accept(view);
        }
    }
}
