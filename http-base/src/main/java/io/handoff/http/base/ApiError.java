package io.handoff.http.base;

import io.handoff.trace.FailureCause;

import java.time.Duration;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * A request the API refuses, as the client will see it: an HTTP status and an OpenAI-style error object
 * {@code {"error": {"message", "type", "param", "code"}}} (used by both APIs, so one client-side parser
 * reads every error), with {@code "cause"} added when a generation failed for a cause the engine named
 * ({@link FailureCause#label()}, e.g. {@code checksum_mismatch}): what a router decides a retry on.
 *
 * @param param the request field at fault, if one is
 * @param retryAfter sent as {@code Retry-After} when present
 */
public final class ApiError
        extends RuntimeException
{
    private final int status;
    private final String type;
    private final String param;
    private final String code;
    private final Duration retryAfter;
    private final String cause;

    private ApiError(int status, String type, String code, String param, String message, Duration retryAfter)
    {
        this(status, type, code, param, message, retryAfter, null);
    }

    private ApiError(int status, String type, String code, String param, String message, Duration retryAfter, String cause)
    {
        super(requireNonNull(message, "message is null"), null, false, false);
        this.status = status;
        this.type = requireNonNull(type, "type is null");
        this.code = requireNonNull(code, "code is null");
        this.param = param;
        this.retryAfter = retryAfter;
        this.cause = cause;
    }

    /** HTTP 400: the request is wrong; {@code param} names the field, or is null when the whole body is at fault. */
    public static ApiError invalid(String code, String param, String message)
    {
        return new ApiError(400, "invalid_request_error", code, param, message, null);
    }

    /** HTTP 401: no API key, or a wrong one; the caller adds {@code WWW-Authenticate}. Never echoes the key presented. */
    public static ApiError unauthorized(String code, String message)
    {
        return new ApiError(401, "invalid_request_error", code, null, message, null);
    }

    /** HTTP 403: the client is known but may not do this (a router field from a client that is not the router). */
    public static ApiError forbidden(String code, String param, String message)
    {
        return new ApiError(403, "invalid_request_error", code, param, message, null);
    }

    public static ApiError notFound(String code, String param, String message)
    {
        return new ApiError(404, "invalid_request_error", code, param, message, null);
    }

    public static ApiError methodNotAllowed(String method, String path, String allowed)
    {
        return new ApiError(405, "invalid_request_error", "method_not_allowed", null,
                method + " is not allowed on " + path + "; use " + allowed, null);
    }

    public static ApiError conflict(String code, String param, String message)
    {
        return new ApiError(409, "invalid_request_error", code, param, message, null);
    }

    public static ApiError tooLarge(long limit)
    {
        return new ApiError(413, "invalid_request_error", "body_too_large", null,
                "the request body is larger than " + limit + " bytes (handoff.server.max-body-bytes)", null);
    }

    /** HTTP 429 with {@code Retry-After} rounded up to whole seconds, as OpenAI answers a client over its rate. */
    public static ApiError rateLimited(String message, Duration retryAfter)
    {
        long seconds = Math.max(1, Math.ceilDiv(requireNonNull(retryAfter, "retryAfter is null").toMillis(), 1000));
        return new ApiError(429, "requests", "rate_limit_exceeded", null, message, Duration.ofSeconds(seconds));
    }

    public static ApiError overloaded(String message, Duration retryAfter)
    {
        return new ApiError(503, "overloaded_error", "overloaded", null, message, requireNonNull(retryAfter, "retryAfter is null"));
    }

    public static ApiError unavailable(String code, String message)
    {
        return new ApiError(503, "server_error", code, null, message, null);
    }

    /** HTTP 503 that says when to try again (the router, when one side has no healthy server). */
    public static ApiError unavailable(String code, String message, Duration retryAfter)
    {
        return new ApiError(503, "server_error", code, null, message, requireNonNull(retryAfter, "retryAfter is null"));
    }

    /**
     * HTTP 503 from a server on its way out (shutting down, or switching role): the request was not started, and a router
     * sends it to another server ({@link FailureCause#DRAINING}, retryable).
     */
    public static ApiError draining(String message)
    {
        return new ApiError(503, "server_error", FailureCause.DRAINING.label(), null, message, null, FailureCause.DRAINING.label());
    }

    /** HTTP 502: a server this one forwards to failed to answer (the router's view of a dead prefill or decode). */
    public static ApiError badGateway(String code, String message)
    {
        return new ApiError(502, "server_error", code, null, message, null);
    }

    /** HTTP 504: a server this one forwards to did not answer in time. */
    public static ApiError gatewayTimeout(String code, String message)
    {
        return new ApiError(504, "server_error", code, null, message, null);
    }

    /**
     * A generation that failed, carrying its cause when one was named: 409 {@code room_unclaimed} when its room was never
     * claimed by a decode (the request carried a {@code bootstrap_room} nobody else was given), else 500.
     */
    public static ApiError generationFailed(Optional<String> error, Optional<FailureCause> cause)
    {
        String message = "generation failed: " + error.orElse("unknown error");
        String label = cause.map(FailureCause::label).orElse(null);
        if (cause.orElse(null) == FailureCause.ROOM_UNCLAIMED) {
            return new ApiError(409, "invalid_request_error", FailureCause.ROOM_UNCLAIMED.label(), "bootstrap_room", message, null, label);
        }
        return new ApiError(500, "server_error", "internal_error", null, message, null, label);
    }

    /**
     * An error a router answers with for a request whose KV transfer failed, naming the {@code cause} label its servers
     * gave: 502, since a server behind it failed.
     */
    public static ApiError transferFailed(String cause, String message)
    {
        return new ApiError(502, "server_error", "kv_transfer_failed", null, message, null, requireNonNull(cause, "cause is null"));
    }

    public static ApiError internal(String message)
    {
        return new ApiError(500, "server_error", "internal_error", null, message, null);
    }

    public int status()
    {
        return status;
    }

    public String type()
    {
        return type;
    }

    public String code()
    {
        return code;
    }

    public Optional<String> param()
    {
        return Optional.ofNullable(param);
    }

    public Optional<Duration> retryAfter()
    {
        return Optional.ofNullable(retryAfter);
    }

    /** The failure cause's label, for a failed generation that named one. */
    public Optional<String> cause()
    {
        return Optional.ofNullable(cause);
    }
}
