package io.handoff.http;

import io.handoff.http.base.ApiError;
import java.net.InetAddress;
import java.util.regex.Pattern;

/**
 * A decode's {@code bootstrap_host}: the prefill's KV-transfer control address, {@code host:port}, checked
 * before anything connects there. The host is a DNS name, an IPv4 literal or a bracketed IPv6 literal; nothing
 * is resolved here (a name that does not resolve fails the request when the decode connects).
 */
final class BootstrapAddress
{
    static final String PARAM = "bootstrap_host";
    private static final int MAX_LENGTH = 261; // a 253-character name, ':', a 5-digit port, and room for brackets
    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?");
    private static final Pattern PORT = Pattern.compile("[0-9]{1,5}");

    private BootstrapAddress() {}

    /** {@code text} when it is a valid {@code host:port}; else a 400 that says what is wrong with it. */
    static String check(String text)
    {
        if (text.length() > MAX_LENGTH) {
            throw invalid(text, "it is longer than " + MAX_LENGTH + " characters");
        }
        int colon = text.lastIndexOf(':');
        if (colon < 0) {
            throw invalid(text, "it has no port");
        }
        String host = text.substring(0, colon);
        String port = text.substring(colon + 1);
        if (!PORT.matcher(port).matches() || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535) {
            throw invalid(text, "the port must be a number in 1..65535");
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            if (!ipv6Literal(host.substring(1, host.length() - 1))) {
                throw invalid(text, "the bracketed host is not an IPv6 address");
            }
            return text;
        }
        if (host.contains(":") && ipv6Literal(host)) {
            throw invalid(text, "an IPv6 host must be written in brackets, e.g. [::1]:41234");
        }
        if (host.isEmpty() || host.length() > 253 || !dnsName(host)) {
            throw invalid(text, "the host is not a DNS name or an IP address");
        }
        return text;
    }

    private static boolean dnsName(String host)
    {
        for (String label : host.split("\\.", -1)) {
            if (!LABEL.matcher(label).matches()) {
                return false;
            }
        }
        return true;
    }

    private static boolean ipv6Literal(String host)
    {
        if (!host.contains(":")) {
            return false;
        }
        try {
            // parses a literal only: never a DNS lookup
            InetAddress.ofLiteral(host);
            return true;
        }
        catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static ApiError invalid(String text, String why)
    {
        String shown = text.length() > 80 ? text.substring(0, 77) + "..." : text;
        return ApiError.invalid("invalid_value", PARAM, "bootstrap_host = \"" + shown + "\" is not host:port (the prefill's control address,"
                + " e.g. 10.0.0.5:41234): " + why);
    }
}
