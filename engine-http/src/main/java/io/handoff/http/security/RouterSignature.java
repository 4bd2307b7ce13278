package io.handoff.http.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * The router's signature on its calls to prefill and decode servers:
 * {@code X-Handoff-Cluster-Auth: t=<unix millis>,mac=<hex>}, where the MAC (keyed with the cluster secret) covers
 * the method, the path, the timestamp and a SHA-256 of the body. A server accepts it within {@link #WINDOW} of
 * its own clock, so a captured call cannot be replayed later, nor its body or target changed at all.
 *
 * <p>Within the window a call can be replayed as it is; what it could do again (the same rid, the same room) the
 * servers refuse as a duplicate while the original is in flight.
 */
public final class RouterSignature
{
    public static final String HEADER = "X-Handoff-Cluster-Auth";
    /** The MAC's context label: a MAC for any other purpose of the same secret never verifies as this one. */
    public static final String CONTEXT = "handoff router request v1";
    public static final Duration WINDOW = Duration.ofSeconds(60);
    private static final Pattern VALUE = Pattern.compile("t=([0-9]{1,19}),mac=([0-9a-fA-F]{1,256})");

    private final ClusterMac mac;
    private final LongSupplier clockMillis;

    /** @param clockMillis the Unix time in milliseconds ({@link System#currentTimeMillis}, or a test's clock) */
    public RouterSignature(ClusterMac mac, LongSupplier clockMillis)
    {
        this.mac = requireNonNull(mac, "mac is null");
        this.clockMillis = requireNonNull(clockMillis, "clockMillis is null");
    }

    /** The header value that signs {@code method path} with {@code body} now. */
    public String sign(String method, String path, byte[] body)
    {
        long now = clockMillis.getAsLong();
        return "t=" + now + ",mac=" + HexFormat.of().formatHex(mac.tag(message(method, path, now, body)));
    }

    /** Empty when {@code header} is a valid signature of this request now; else why not, in words for the caller's error. */
    public Optional<String> refusal(String method, String path, byte[] body, String header)
    {
        if (header == null) {
            return Optional.of("the request carries no " + HEADER + " header");
        }
        Matcher value = VALUE.matcher(header.strip());
        if (!value.matches()) {
            return Optional.of("its " + HEADER + " header is not t=<unix millis>,mac=<hex>");
        }
        long timestamp;
        try {
            timestamp = Long.parseLong(value.group(1));
        }
        catch (NumberFormatException e) {
            return Optional.of("its " + HEADER + " timestamp is out of range");
        }
        long skew = Math.abs(clockMillis.getAsLong() - timestamp);
        if (skew > WINDOW.toMillis()) {
            return Optional.of("its " + HEADER + " timestamp is " + skew + " ms away from this server's clock (at most "
                    + WINDOW.toSeconds() + " s is accepted: are the clocks synchronised?)");
        }
        if (!mac.verify(message(method, path, timestamp, body), value.group(2))) {
            return Optional.of("its " + HEADER + " signature does not verify (a different cluster secret, or a changed request)");
        }
        return Optional.empty();
    }

    /** What the MAC covers: each part on its own line, the body as its SHA-256 (so the MAC input stays small). */
    static byte[] message(String method, String path, long timestamp, byte[] body)
    {
        requireNonNull(method, "method is null");
        requireNonNull(path, "path is null");
        requireNonNull(body, "body is null");
        return (method + "\n" + path + "\n" + timestamp + "\n" + HexFormat.of().formatHex(sha256(body))).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] sha256(byte[] body)
    {
        try {
            return MessageDigest.getInstance("SHA-256").digest(body);
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
