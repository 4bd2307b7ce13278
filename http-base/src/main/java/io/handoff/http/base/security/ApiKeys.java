package io.handoff.http.base.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The API keys a server or router accepts ({@code handoff.server.api-keys} and {@code api-key-file}):
 * {@code Authorization: Bearer <key>}. No keys means no authentication.
 *
 * <p>Keys are held as SHA-256 digests and a presented key is compared digest to digest with
 * {@link MessageDigest#isEqual} against every key, so neither the time taken nor an early exit tells a
 * client how much of a key it got right, or how long the keys are.
 */
public final class ApiKeys
{
    public static final ApiKeys NONE = new ApiKeys(List.of(), Optional.empty());

    /** What a request's {@code Authorization} header amounts to. */
    public enum Verdict
    {
        ACCEPTED,
        /** No {@code Authorization: Bearer} header at all. */
        MISSING,
        /** A bearer token that is none of the keys. */
        WRONG
    }

    private static final String BEARER = "bearer ";

    private final List<byte[]> digests;
    private final Optional<String> ownKey;

    private ApiKeys(List<byte[]> digests, Optional<String> ownKey)
    {
        this.digests = List.copyOf(digests);
        this.ownKey = ownKey;
    }

    /** Refuses an empty key or one with whitespace (it could never be sent in one header), naming its position. */
    public static ApiKeys of(List<String> keys)
    {
        requireNonNull(keys, "keys is null");
        List<byte[]> digests = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            String key = requireNonNull(keys.get(i), "key is null");
            if (key.isEmpty() || !key.equals(key.strip()) || key.chars().anyMatch(Character::isWhitespace)) {
                throw new IllegalArgumentException("API key " + (i + 1) + " of " + keys.size()
                        + " is empty or contains whitespace; a key is one word sent as 'Authorization: Bearer <key>'");
            }
            digests.add(digest(key));
        }
        return new ApiKeys(digests, keys.stream().findFirst());
    }

    /** Whether any key is configured (otherwise every request is let in). */
    public boolean required()
    {
        return !digests.isEmpty();
    }

    public int count()
    {
        return digests.size();
    }

    /** The key this process sends when it calls other servers of its deployment (the router's calls): the first one. */
    public Optional<String> ownKey()
    {
        return ownKey;
    }

    /** Judges an {@code Authorization} header value (null when the request had none). */
    public Verdict check(String authorization)
    {
        if (authorization == null || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return Verdict.MISSING;
        }
        String token = authorization.substring(BEARER.length()).strip();
        return anyEqual(digest(token), digests) ? Verdict.ACCEPTED : Verdict.WRONG;
    }

    /**
     * Whether {@code presented} equals one of {@code digests}: compares with every one (no early exit), each in
     * time that depends only on the digest length, which is fixed.
     */
    static boolean anyEqual(byte[] presented, List<byte[]> digests)
    {
        boolean found = false;
        for (byte[] digest : digests) {
            found |= MessageDigest.isEqual(presented, digest);
        }
        return found;
    }

    /** SHA-256 of a key's UTF-8 bytes: 32 bytes whatever the key's length. */
    static byte[] digest(String key)
    {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    @Override
    public String toString()
    {
        // never the keys themselves: this may end up in a log line
        return digests.isEmpty() ? "no API keys" : String.format(Locale.ROOT, "%d API key(s)", digests.size());
    }
}
