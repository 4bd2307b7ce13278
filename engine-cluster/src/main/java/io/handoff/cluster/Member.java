package io.handoff.cluster;

import java.net.URI;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * One prefill or decode server as membership knows it. Values that come from a membership store (an etcd key, a pod's
 * labels) are checked here, before anything routes by them: an id or an incarnation is a bounded token, an address is
 * {@code http(s)://HOST:PORT} and nothing else.
 *
 * @param id the server's stable name: it keeps it across restarts (a pod name, or {@code handoff.cluster.member-id},
 *         or its advertised {@code HOST:PORT})
 * @param role prefill or decode
 * @param incarnation the id of the process now running under {@code id}; a restart gets a new one. Empty when the
 *         source cannot know it (static discovery): the router then learns it from the server's {@code /bootstrap}
 * @param http the server's HTTP API, {@code http://HOST:PORT} (a path prefix allowed, as behind a proxy)
 * @param compatibility the model compatibility hash (see {@code /bootstrap}); empty when the source does not carry it
 * @param capacity the KV pages the server's pool holds (0: not published)
 * @param draining whether the server is on its way out: it finishes what it has but gets nothing new
 */
public record Member(String id, MemberRole role, String incarnation, URI http, String compatibility, long capacity, boolean draining)
{
    /** Longest id or incarnation accepted from a membership store. */
    public static final int MAX_TOKEN = 253;
    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0," + (MAX_TOKEN - 1) + "}");
    private static final Pattern HASH = Pattern.compile("[\\x21-\\x7e]{0,256}");

    public Member
    {
        requireNonNull(id, "id is null");
        requireNonNull(role, "role is null");
        requireNonNull(incarnation, "incarnation is null");
        requireNonNull(http, "http is null");
        requireNonNull(compatibility, "compatibility is null");
        if (!TOKEN.matcher(id).matches()) {
            throw new IllegalArgumentException("member id '" + excerpt(id) + "' is not 1 to " + MAX_TOKEN + " of [A-Za-z0-9._:/-], starting with a letter or digit");
        }
        if (!incarnation.isEmpty() && !TOKEN.matcher(incarnation).matches()) {
            throw new IllegalArgumentException("incarnation '" + excerpt(incarnation) + "' of member " + id + " is not 1 to " + MAX_TOKEN + " of [A-Za-z0-9._:/-]");
        }
        if (!HASH.matcher(compatibility).matches()) {
            throw new IllegalArgumentException("compatibility hash '" + excerpt(compatibility) + "' of member " + id + " is not up to 256 printable ASCII characters without spaces");
        }
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity of member " + id + " is negative: " + capacity);
        }
        http = httpAddress(http);
    }

    /** This member, marked draining. */
    public Member asDraining()
    {
        return new Member(id, role, incarnation, http, compatibility, capacity, true);
    }

    /** Whether {@code other} is the same process as this one: the same id and a known, equal incarnation. */
    public boolean sameIncarnation(Member other)
    {
        return id.equals(other.id) && !incarnation.isEmpty() && incarnation.equals(other.incarnation);
    }

    /** {@code url} without a trailing {@code /} if it is {@code http(s)://HOST:PORT[/PATH]}; otherwise why not. */
    public static URI httpAddress(URI url)
    {
        requireNonNull(url, "url is null");
        if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
            throw new IllegalArgumentException("'" + excerpt(url.toString()) + "' is not an http:// or https:// URL");
        }
        if (url.getHost() == null || url.getPort() < 1 || url.getPort() > 65535) {
            throw new IllegalArgumentException("'" + excerpt(url.toString()) + "' does not name a host and a port, e.g. http://10.0.0.5:30000");
        }
        if (url.getRawQuery() != null || url.getRawFragment() != null || url.getRawUserInfo() != null) {
            throw new IllegalArgumentException("'" + excerpt(url.toString()) + "' must be just a server's address, without user info, query or fragment");
        }
        String path = url.getRawPath() == null || url.getRawPath().equals("/") ? "" : url.getRawPath();
        return URI.create(url.getScheme() + "://" + url.getRawAuthority() + path);
    }

    private static String excerpt(String text)
    {
        String clean = text.codePoints().limit(80).map(c -> c < 0x20 || c == 0x7f ? '?' : c)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString();
        return text.length() > 80 ? clean + "..." : clean;
    }
}
