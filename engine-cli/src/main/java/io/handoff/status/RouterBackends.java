package io.handoff.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.StaticMembership;
import io.handoff.http.security.RouterCredentials;
import io.handoff.router.NoAnswer;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * The servers a running router pairs, read from its {@code GET /backends} (an array of {@code {"url", "role", ...}}),
 * as a {@link StaticMembership}. The answer is checked like any other from the network: bounded, every URL a plain
 * server address, every role prefill or decode.
 */
public final class RouterBackends
{
    /** Most servers taken from one router's answer. */
    static final int MAX_BACKENDS = 4096;
    private static final ObjectMapper JSON = new ObjectMapper();

    private RouterBackends() {}

    /** @throws IOException when the router could not be asked or its answer is not a list of servers; the message says which */
    public static StaticMembership read(HttpClient client, RouterCredentials credentials, URI router, Duration timeout)
            throws IOException, InterruptedException
    {
        requireNonNull(client, "client is null");
        requireNonNull(credentials, "credentials is null");
        URI uri = URI.create(Member.httpAddress(router) + "/backends");
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(timeout).GET();
        var call = client.sendAsync(credentials.apply(request, "GET", uri, new byte[0]).build(), BoundedBody.handler(MemberProbe.MAX_ANSWER_BYTES));
        HttpResponse<byte[]> response;
        try {
            response = call.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        catch (TimeoutException e) {
            call.cancel(true);
            throw new IOException("GET " + uri + " did not answer within " + timeout.toMillis() + " ms (--timeout)");
        }
        catch (ExecutionException e) {
            throw new IOException("GET " + uri + " failed: " + NoAnswer.describe(e.getCause()), e.getCause());
        }
        if (response.statusCode() != 200) {
            throw new IOException("GET " + uri + " answered " + response.statusCode() + ": " + Untrusted.excerpt(response.body())
                    + (response.statusCode() == 401 ? " (the router wants an API key: set handoff.server.api-keys as the deployment does)" : ""));
        }
        return parse(uri, response.body());
    }

    static StaticMembership parse(URI uri, byte[] body)
            throws IOException
    {
        JsonNode list;
        try {
            list = JSON.readTree(body);
        }
        catch (IOException e) {
            throw new IOException("GET " + uri + " did not answer JSON; is it a handoff router?");
        }
        if (list == null || !list.isArray()) {
            throw new IOException("GET " + uri + " did not answer a JSON array of servers; is it a handoff router?");
        }
        if (list.size() > MAX_BACKENDS) {
            throw new IOException("GET " + uri + " lists " + list.size() + " servers, more than the " + MAX_BACKENDS + " taken");
        }
        Set<URI> prefills = new LinkedHashSet<>();
        Set<URI> decodes = new LinkedHashSet<>();
        for (int i = 0; i < list.size(); i++) {
            JsonNode entry = list.get(i);
            Optional<String> url = Untrusted.field(entry, "url");
            Optional<MemberRole> role = Untrusted.field(entry, "role").flatMap(MemberRole::parse);
            if (url.isEmpty() || role.isEmpty()) {
                throw new IOException("GET " + uri + ": entry " + i + " has no \"url\" string or no \"role\" prefill or decode");
            }
            URI address;
            try {
                address = Member.httpAddress(URI.create(url.get()));
            }
            catch (IllegalArgumentException e) {
                throw new IOException("GET " + uri + ": entry " + i + ": " + e.getMessage());
            }
            if (prefills.contains(address) || decodes.contains(address)) {
                throw new IOException("GET " + uri + " lists " + address + " more than once");
            }
            (role.get() == MemberRole.PREFILL ? prefills : decodes).add(address);
        }
        return new StaticMembership(new ArrayList<>(prefills), List.copyOf(decodes));
    }
}
