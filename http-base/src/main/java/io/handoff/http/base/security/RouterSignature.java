package io.handoff.http.base.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * The router's signature on its calls to prefill and decode servers:
 * {@code X-Handoff-Cluster-Auth: t=<unix millis>,n=<nonce>,mac=<hex>}, where the MAC (keyed with the cluster secret)
 * covers the method, the path, the timestamp, a random 128-bit nonce and a SHA-256 of the body. A server accepts it
 * within {@link #WINDOW} of its own clock and only once: it keeps the nonces it accepted until they leave the
 * window ({@link UsedSignatures}), so a captured call can be replayed neither later nor within the window, nor its
 * body or target changed at all.
 */
public final class RouterSignature
{
    public static final String HEADER = "X-Handoff-Cluster-Auth";
    /** The MAC's context label: a MAC for any other purpose of the same secret never verifies as this one. */
    public static final String CONTEXT = "handoff router request v1";
    public static final Duration WINDOW = Duration.ofSeconds(60);
    /**
     * Signatures a server keeps at once (each for at most twice the window): 2^17, about 2,000 signed calls a second
     * to one server sustained over the window, and about 20 MiB at most.
     */
    static final int MAX_LIVE_SIGNATURES = 1 << 17;
    private static final Pattern VALUE = Pattern.compile("t=([0-9]{1,19}),n=([0-9a-f]{32}),mac=([0-9a-fA-F]{1,256})");
    private static final SecureRandom NONCES = new SecureRandom();

    private final ClusterMac mac;
    private final LongSupplier clockMillis;
    private final UsedSignatures used;

    /** @param clockMillis the Unix time in milliseconds ({@link System#currentTimeMillis}, or a test's clock) */
    public RouterSignature(ClusterMac mac, LongSupplier clockMillis)
    {
        this(mac, clockMillis, MAX_LIVE_SIGNATURES);
    }

    RouterSignature(ClusterMac mac, LongSupplier clockMillis, int maxLiveSignatures)
    {
        this.mac = requireNonNull(mac, "mac is null");
        this.clockMillis = requireNonNull(clockMillis, "clockMillis is null");
        this.used = new UsedSignatures(maxLiveSignatures);
    }

    /** The header value that signs {@code method path} with {@code body} now, under a fresh nonce. */
    public String sign(String method, String path, byte[] body)
    {
        long now = clockMillis.getAsLong();
        byte[] nonce = new byte[16];
        NONCES.nextBytes(nonce);
        String n = HexFormat.of().formatHex(nonce);
        return "t=" + now + ",n=" + n + ",mac=" + HexFormat.of().formatHex(mac.tag(message(method, path, now, n, body)));
    }

    /** Empty when {@code header} is a valid signature of this request now; else why not, in words for the caller's error. */
    public Optional<String> refusal(String method, String path, byte[] body, String header)
    {
        if (header == null) {
            return Optional.of("the request carries no " + HEADER + " header");
        }
        Matcher value = VALUE.matcher(header.strip());
        if (!value.matches()) {
            return Optional.of("its " + HEADER + " header is not t=<unix millis>,n=<32 hex digits>,mac=<hex>");
        }
        long timestamp;
        try {
            timestamp = Long.parseLong(value.group(1));
        }
        catch (NumberFormatException e) {
            return Optional.of("its " + HEADER + " timestamp is out of range");
        }
        long now = clockMillis.getAsLong();
        long skew = Math.abs(now - timestamp);
        if (skew > WINDOW.toMillis()) {
            return Optional.of("its " + HEADER + " timestamp is " + skew + " ms away from this server's clock (at most "
                    + WINDOW.toSeconds() + " s is accepted: are the clocks synchronised?)");
        }
        String nonce = value.group(2);
        if (!mac.verify(message(method, path, timestamp, nonce, body), value.group(3))) {
            return Optional.of("its " + HEADER + " signature does not verify (a different cluster secret, or a changed request)");
        }
        // recorded only once it verified: a stranger cannot fill the record
        return used.use(nonce, timestamp + WINDOW.toMillis(), now);
    }

    /** Signatures recorded as used and not yet expired (for tests). */
    int liveSignatures()
    {
        return used.size();
    }

    /** What the MAC covers: each part on its own line, the body as its SHA-256 (so the MAC input stays small). */
    static byte[] message(String method, String path, long timestamp, String nonce, byte[] body)
    {
        requireNonNull(method, "method is null");
        requireNonNull(path, "path is null");
        requireNonNull(nonce, "nonce is null");
        requireNonNull(body, "body is null");
        return (method + "\n" + path + "\n" + timestamp + "\n" + nonce + "\n" + HexFormat.of().formatHex(sha256(body)))
                .getBytes(StandardCharsets.UTF_8);
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
