package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.cluster.MemberRole;
import io.handoff.http.base.JsonFields;
import io.handoff.trace.PeerText;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * One poll of one server: {@code GET /health}, and when the server has just become healthy,
 * {@code GET /bootstrap}. The bootstrap is read again on every recovery because a restarted prefill has
 * a new KV-transfer control port; a server whose bootstrap says it has the other role stays out, since pairing two
 * prefills would only fail later and less clearly: where membership learns roles from the servers (static lists) the
 * server switched roles and moves to the other side ({@link RoleReports}); elsewhere the URL lists are mixed up, or its
 * new registration has not arrived yet.
 */
final class HealthCheck
{
    private static final Logger log = LogManager.getLogger(HealthCheck.class);
    private static final Pattern HOST_PORT = Pattern.compile(".+:[0-9]{1,5}");

    private final Upstream upstream;
    private final Duration timeout;
    private final int unhealthyAfterTimeouts;
    private final RoleReports roleReports;

    /** Where a server that reports another role than it is listed with goes (see {@link io.handoff.cluster.Membership#roleReported}). */
    @FunctionalInterface
    interface RoleReports
    {
        RoleReports NONE = (backend, role) -> false;

        /** True when membership lists {@code backend}'s member with {@code role} from now on. */
        boolean reported(Backend backend, MemberRole role);
    }

    HealthCheck(Upstream upstream, Duration timeout, int unhealthyAfterTimeouts)
    {
        this(upstream, timeout, unhealthyAfterTimeouts, RoleReports.NONE);
    }

    HealthCheck(Upstream upstream, Duration timeout, int unhealthyAfterTimeouts, RoleReports roleReports)
    {
        this.roleReports = requireNonNull(roleReports, "roleReports is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.timeout = requireNonNull(timeout, "timeout is null");
        this.unhealthyAfterTimeouts = unhealthyAfterTimeouts;
    }

    void probe(Backend backend)
            throws InterruptedException
    {
        try {
            HttpResponse<byte[]> health;
            try {
                health = upstream.get(backend, "/health", timeout);
            }
            catch (HttpConnectTimeoutException e) {
                // Not slow but gone (a host that drops connection attempts): out at once, like a refused connection.
                down(backend, Upstream.describe(e));
                return;
            }
            catch (HttpTimeoutException e) {
                unanswered(backend);
                return;
            }
            backend.answered();
            if (health.statusCode() != 200) {
                down(backend, "GET /health answered " + health.statusCode() + excerpt(health.body()));
                return;
            }
            if (backend.role() == BackendRole.DECODE) {
                noteSuspects(backend, health.body());
            }
            noteLoad(backend, health.body());
            if (backend.healthy()) {
                return;
            }
            HttpResponse<byte[]> bootstrap = upstream.get(backend, "/bootstrap", timeout);
            if (bootstrap.statusCode() != 200) {
                down(backend, "GET /bootstrap answered " + bootstrap.statusCode() + excerpt(bootstrap.body()));
                return;
            }
            JsonNode json;
            try {
                json = JsonFields.MAPPER.readTree(bootstrap.body());
            }
            catch (IOException e) {
                down(backend, "GET /bootstrap did not answer JSON: " + e.getMessage());
                return;
            }
            Optional<MemberRole> reported = json.path("role").isTextual() ? MemberRole.parse(json.path("role").textValue()) : Optional.empty();
            if (reported.isPresent() && BackendRole.of(reported.get()) != backend.role() && roleReports.reported(backend, reported.get())) {
                down(backend, "it reports role " + reported.get().label() + " now (its role was switched): it serves as a " + reported.get().label());
                return;
            }
            Optional<String> problem = problem(backend.role(), json).or(() -> otherIncarnation(backend, json));
            if (problem.isPresent()) {
                down(backend, problem.get());
                return;
            }
            String before = backend.incarnation();
            if (backend.up(json)) {
                String now = backend.incarnation();
                log.info("{} is healthy{}{}", backend, backend.control().map(control -> " (KV-transfer control " + control + ")").orElse(""),
                        !before.isEmpty() && !before.equals(now) ? "; it restarted: incarnation " + before + " is now " + now : "");
            }
        }
        catch (IOException e) {
            down(backend, Upstream.describe(e));
        }
    }

    /**
     * A decode lists in {@code suspect_peers} the prefills that neither drained nor exited within its drain deadline;
     * the pool pairs none of them until no decode lists it. An answer without the list (an older server) lists none.
     */
    private static void noteSuspects(Backend decode, byte[] body)
    {
        Set<String> suspects = new TreeSet<>();
        try {
            JsonNode listed = JsonFields.MAPPER.readTree(body).path("suspect_peers");
            for (JsonNode peer : listed) {
                if (peer.isTextual() && HOST_PORT.matcher(peer.textValue()).matches()) {
                    suspects.add(peer.textValue());
                }
            }
        }
        catch (IOException e) {
            // the status said healthy; a body that is not JSON names no suspect
        }
        Set<String> before = decode.suspectPeers();
        decode.suspectPeers(suspects);
        if (!before.equals(suspects)) {
            log.warn("{} reports suspect prefills {} (they did not drain within its drain deadline); none of them is paired{}", decode, suspects,
                    suspects.isEmpty() ? " any more: all are cleared" : "");
        }
    }

    /** The load a server's {@code /health} reports (none from an older server, or a body that is not JSON). */
    private static void noteLoad(Backend backend, byte[] body)
    {
        try {
            JsonNode load = JsonFields.MAPPER.readTree(body).path("load");
            backend.reported(new Backend.ReportedLoad(Math.max(0, load.path("waiting").asInt(0)), Math.max(0, load.path("running").asInt(0)),
                    load.path("ttft_p90_seconds").asDouble(-1), load.path("itl_p90_seconds").asDouble(-1)));
        }
        catch (IOException e) {
            backend.reported(Backend.ReportedLoad.NONE);
        }
    }

    /**
     * A healthy server that is slow to answer (a long GC pause, every core busy) keeps its requests until
     * {@code unhealthyAfterTimeouts} polls in a row went unanswered; one that is not healthy stays out.
     */
    private void unanswered(Backend backend)
    {
        int inARow = backend.unanswered();
        String reason = "GET /health got no answer within " + timeout.toMillis() + " ms (handoff.router.health-timeout)";
        if (backend.healthy() && inARow < unhealthyAfterTimeouts) {
            log.info("{} is slow: {}, {} poll(s) in a row; it is taken out after {} (handoff.router.unhealthy-after-timeouts)", backend, reason,
                    inARow, unhealthyAfterTimeouts);
            return;
        }
        down(backend, reason);
    }

    /** What is wrong with a {@code /bootstrap} answer for a server given as {@code role}, if anything. */
    static Optional<String> problem(BackendRole role, JsonNode bootstrap)
    {
        if (!bootstrap.isObject()) {
            return Optional.of("GET /bootstrap answered " + bootstrap.getNodeType() + ", not a JSON object");
        }
        JsonNode reported = bootstrap.path("role");
        if (!reported.isTextual() || !reported.textValue().equals(role.label())) {
            return Optional.of("it was given as --" + role.label() + " but its GET /bootstrap reports role " + reported
                    + "; check the router's --prefill and --decode URLs");
        }
        if (role == BackendRole.PREFILL) {
            JsonNode control = bootstrap.path("control");
            if (!control.isTextual() || !HOST_PORT.matcher(control.textValue()).matches()) {
                return Optional.of("its GET /bootstrap has no KV-transfer 'control' endpoint HOST:PORT (got " + control + ")");
            }
        }
        return Optional.empty();
    }

    /**
     * A server at the member's address that is not the incarnation membership lists (the member restarted and the
     * store has not caught up, or another process took the port): it stays out until membership and server agree.
     */
    private static Optional<String> otherIncarnation(Backend backend, JsonNode bootstrap)
    {
        String listed = backend.member().incarnation();
        JsonNode reported = bootstrap.path("incarnation");
        if (listed.isEmpty() || !reported.isTextual() || reported.textValue().equals(listed)) {
            return Optional.empty();
        }
        return Optional.of("its GET /bootstrap reports incarnation " + PeerText.clean(reported.textValue(), 80) + " but membership lists "
                + listed + ": another process answers at its address; it gets requests once membership lists that one");
    }

    static void down(Backend backend, String reason)
    {
        Optional<String> before = backend.unhealthyReason();
        backend.down(reason);
        // Logged when it changes, not on every poll of a server that stays down.
        if (!before.equals(Optional.of(reason))) {
            log.warn("{} is unhealthy: {}; it gets no new requests until a poll succeeds", backend, reason);
        }
    }

    private static String excerpt(byte[] body)
    {
        if (body == null || body.length == 0) {
            return "";
        }
        String text = new String(body, 0, Math.min(body.length, 200), StandardCharsets.UTF_8).strip();
        return ": " + text + (body.length > 200 ? "..." : "");
    }
}
