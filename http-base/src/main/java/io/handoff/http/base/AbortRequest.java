package io.handoff.http.base;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.util.Set;
import java.util.function.Predicate;

/**
 * {@code POST /abort_request} as a server and the router answer it: {@code {"rid": ...}} in; 200 with
 * {@code {"rid", "aborted": true}} when a request with that rid was in flight, 404 naming the rid when not.
 */
public final class AbortRequest
{
    private AbortRequest() {}

    /**
     * @param abort aborts the request with this rid; false when none is in flight
     * @param scope where the request was looked for, for the 404 ("" for a server, " through this router")
     */
    public static void handle(Exchange exchange, Predicate<String> abort, String scope)
            throws IOException
    {
        JsonFields body = exchange.json();
        body.allowOnly(Set.of("rid"));
        String rid = body.string("rid").orElseThrow(() -> ApiError.invalid("missing_field", "rid", "'rid' is required: the id of the request to abort"));
        if (!abort.test(rid)) {
            throw ApiError.notFound("rid_not_found", "rid", "no request with rid '" + rid + "' is in flight" + scope + " (it may have finished already)");
        }
        ObjectNode response = JsonFields.MAPPER.createObjectNode();
        response.put("rid", rid);
        response.put("aborted", true);
        exchange.sendJson(200, response);
    }
}
