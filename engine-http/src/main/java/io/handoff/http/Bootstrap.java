package io.handoff.http;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.security.RouterAuthentication;
import io.handoff.http.base.security.RouterSignature;
import io.handoff.spi.transfer.RoomKey;

import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The router's room fields on a request ({@code bootstrap_room}, {@code bootstrap_generation}, and on a
 * decode {@code bootstrap_host}, the prefill's control address), checked against this server's role, their
 * syntax, and who sent them: with them a client chooses where a decode connects, so they are taken only
 * from the router ({@link RouterAuthentication}). On a decode, {@code bootstrap_local: true} instead says the router
 * found no prefill for the request (decode-local fallback): the decode computes the prompt itself, as a colocated
 * server would.
 */
final class Bootstrap
{
    static final Set<String> FIELDS = Set.of("bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local");

    private final Optional<Disaggregation.Role> role;
    private final RouterAuthentication router;

    Bootstrap(Optional<Disaggregation.Role> role, RouterAuthentication router)
    {
        this.role = requireNonNull(role, "role is null");
        this.router = requireNonNull(router, "router is null");
    }

    String roleName()
    {
        return role.map(r -> r.name().toLowerCase(java.util.Locale.ROOT)).orElse("colocated");
    }

    /** The request's room on a prefill or decode; empty on a colocated server. */
    Optional<RoomTicket> ticket(JsonFields body, Exchange exchange)
    {
        return ticket(body, exchange.method(), exchange.path(), exchange.body(), exchange.header(RouterSignature.HEADER));
    }

    /** {@link #ticket(JsonFields, Exchange)} of a request made of these parts (what the router's signature covers). */
    Optional<RoomTicket> ticket(JsonFields body, String method, String path, byte[] rawBody, String signature)
    {
        boolean any = FIELDS.stream().anyMatch(body::has);
        if (role.isEmpty()) {
            if (any) {
                String field = FIELDS.stream().filter(body::has).sorted().findFirst().orElseThrow();
                throw ApiError.invalid("unexpected_field", field, "'" + field + "' belongs to a disaggregated deployment; this server is colocated");
            }
            return Optional.empty();
        }
        if (any) {
            router.refusal(method, path, rawBody, signature).ifPresent(why -> {
                String field = FIELDS.stream().filter(body::has).sorted().findFirst().orElseThrow();
                throw ApiError.forbidden("router_authentication_failed", field, "'" + field + "' is accepted only from the router, which signs"
                        + " its calls with the cluster secret; this request is not signed by it: " + why);
            });
        }
        if (body.bool("bootstrap_local").orElse(false)) {
            if (role.get() != Disaggregation.Role.DECODE || body.has("bootstrap_room") || body.has("bootstrap_host")) {
                throw ApiError.invalid("invalid_value", "bootstrap_local", "'bootstrap_local' asks a decode to compute the prompt itself "
                        + "(the router's fallback when no prefill is available); it goes to a decode, without a room");
            }
            return Optional.empty();
        }
        long room = body.integer("bootstrap_room", 0, Long.MAX_VALUE).orElseThrow(() -> ApiError.invalid("missing_field", "bootstrap_room",
                "a " + roleName() + " server takes requests from a router: 'bootstrap_room' is required (send requests to the router)"));
        int generation = body.integer("bootstrap_generation", 0, Integer.MAX_VALUE).map(Long::intValue).orElse(0);
        String host = body.string("bootstrap_host").orElse("");
        if (role.get() == Disaggregation.Role.DECODE && host.isBlank()) {
            throw ApiError.invalid("missing_field", "bootstrap_host", "a decode needs 'bootstrap_host', the prefill's control address (host:port)");
        }
        if (!host.isEmpty()) {
            BootstrapAddress.check(host);
        }
        return Optional.of(new RoomTicket(new RoomKey(room, generation), role.get() == Disaggregation.Role.DECODE ? host : ""));
    }

    /**
     * The room of generation {@code index} of a request whose first generation has {@code first}: the next rooms of
     * the router's block, with the same generation and prefill.
     */
    static Optional<RoomTicket> forOutput(Optional<RoomTicket> first, int index)
    {
        if (index == 0 || first.isEmpty()) {
            return first;
        }
        RoomKey room = first.get().room();
        if (room.roomId() > Long.MAX_VALUE - index) {
            throw ApiError.invalid("invalid_value", "bootstrap_room", "bootstrap_room " + room.roomId() + " leaves no room for generation "
                    + index + " of this request (rooms bootstrap_room + i are used)");
        }
        return Optional.of(new RoomTicket(new RoomKey(room.roomId() + index, room.generation()), first.get().bootstrap()));
    }

    /** Whether this server computes prompts (colocated or prefill); a decode receives their KV. */
    boolean computesPrompts()
    {
        return role.orElse(null) != Disaggregation.Role.DECODE;
    }

    /** A prefill computes the prompt and samples only the first token; the decode produces the rest. */
    int maxNewTokens(int requested)
    {
        return role.orElse(null) == Disaggregation.Role.PREFILL ? 1 : requested;
    }
}
