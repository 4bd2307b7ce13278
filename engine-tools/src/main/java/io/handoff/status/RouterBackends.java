package io.handoff.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.cluster.BoundedBody;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.MembershipView;
import io.handoff.http.base.security.RouterCredentials;
import io.handoff.router.NoAnswer;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * The servers a running router pairs, read from its {@code GET /backends} (an array of {@code {"id", "url", "role",
 * "incarnation", "draining", ...}}), as a membership view. The answer is checked like any other from the network:
 * bounded, and every entry a valid {@link Member} (a plain server address, a role prefill or decode, a bounded id).
 */
public final class RouterBackends
{
    /** Most servers taken from one router's answer. */
    static final int MAX_BACKENDS = 4096;
    private static final ObjectMapper JSON = new ObjectMapper();

    private RouterBackends() {}

    /** @throws IOException when the router could not be asked or its answer is not a list of servers; the message says which */
    public static MembershipView read(HttpClient client, RouterCredentials credentials, URI router, Duration timeout)
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

    static MembershipView parse(URI uri, byte[] body)
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
        List<Member> members = new ArrayList<>();
        Set<URI> seen = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            Member member = member(uri, i, list.get(i));
            if (!seen.add(member.http()) || members.stream().anyMatch(other -> other.id().equals(member.id()))) {
                throw new IOException("GET " + uri + " lists " + member.id() + " (" + member.http() + ") more than once");
            }
            members.add(member);
        }
        return MembershipView.of(members);
    }

    /** Entry {@code index}: an id when the router gives one (else the URL, as static lists name servers), no incarnation when it knows none. */
    private static Member member(URI uri, int index, JsonNode entry)
            throws IOException
    {
        Optional<String> url = Untrusted.field(entry, "url");
        Optional<MemberRole> role = Untrusted.field(entry, "role").flatMap(MemberRole::parse);
        if (url.isEmpty() || role.isEmpty()) {
            throw new IOException("GET " + uri + ": entry " + index + " has no \"url\" string or no \"role\" prefill or decode");
        }
        try {
            URI address = Member.httpAddress(URI.create(url.get()));
            String id = Untrusted.field(entry, "id").orElse(address.toString());
            return new Member(id, role.get(), Untrusted.field(entry, "incarnation").orElse(""), address, "", 0, entry.path("draining").isBoolean() && entry.path("draining").booleanValue());
        }
        catch (IllegalArgumentException e) {
            throw new IOException("GET " + uri + ": entry " + index + ": " + e.getMessage());
        }
    }
}
