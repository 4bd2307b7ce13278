package io.handoff.http.chat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.output.ToolFormat;
import io.handoff.http.base.JsonFields;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * Tool calls as OpenAI's chat API writes them: {@code tool_calls} of a message ({@code id}, {@code type},
 * {@code function.name}, {@code function.arguments} as JSON text) and of a stream's deltas (with their {@code index}).
 * A call's id is derived from the request id, the choice and the call's position, so the same request gets the same
 * ids on a colocated server and through PD.
 */
final class ToolCallJson
{
    private ToolCallJson() {}

    static String id(String rid, int choice, int index)
    {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest((rid + "/" + choice + "/" + index).getBytes(StandardCharsets.UTF_8));
            return "call_" + HexFormat.of().formatHex(digest, 0, 12);
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    /** A call's arguments as a JSON tree (an object; text that does not parse stays a string). */
    static JsonNode arguments(ToolFormat.Call call)
    {
        try {
            return JsonFields.MAPPER.readTree(call.arguments());
        }
        catch (JsonProcessingException e) {
            return JsonFields.MAPPER.getNodeFactory().textNode(call.arguments());
        }
    }

    /** A message's {@code tool_calls}. */
    static ArrayNode message(String rid, int choice, List<ToolFormat.Call> calls)
    {
        ArrayNode array = JsonFields.MAPPER.createArrayNode();
        for (int i = 0; i < calls.size(); i++) {
            ObjectNode call = array.addObject();
            call.put("id", id(rid, choice, i));
            call.put("type", "function");
            call.putObject("function").put("name", calls.get(i).name()).put("arguments", calls.get(i).arguments());
        }
        return array;
    }

    /** A delta's {@code tool_calls}: each call whole, with its index. */
    static ArrayNode delta(String rid, int choice, List<ToolFormat.Call> calls)
    {
        ArrayNode array = message(rid, choice, calls);
        for (int i = 0; i < array.size(); i++) {
            ((ObjectNode) array.get(i)).put("index", i);
        }
        return array;
    }

    /**
     * How much of the output so far may be streamed as content: all of it up to the trigger, less a tail that could be
     * the start of the trigger, and less trailing whitespace (the content before calls goes out without it).
     */
    static int streamable(String text, String trigger)
    {
        int end = text.indexOf(trigger);
        if (end < 0) {
            end = text.length();
            for (int keep = Math.min(trigger.length() - 1, text.length()); keep > 0; keep--) {
                if (text.endsWith(trigger.substring(0, keep))) {
                    end = text.length() - keep;
                    break;
                }
            }
        }
        while (end > 0 && Character.isWhitespace(text.charAt(end - 1))) {
            end--;
        }
        return end;
    }
}
