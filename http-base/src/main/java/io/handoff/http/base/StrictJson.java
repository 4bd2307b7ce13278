package io.handoff.http.base;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The JSON reader for bytes from the network (a client's body, an etcd or Kubernetes API answer): a duplicate key or
 * trailing tokens are errors, not silently resolved, and nesting is bounded. Sizes are bounded by the caller before
 * parsing; this bounds the parser's recursion on a deeply nested input.
 */
public final class StrictJson
{
    private StrictJson() {}

    /** @param maxNestingDepth deepest nesting of objects and arrays accepted */
    public static ObjectMapper mapper(int maxNestingDepth)
    {
        return mapper(StreamReadConstraints.builder().maxNestingDepth(maxNestingDepth).build());
    }

    /** @param maxStringLength longest string value accepted, in characters */
    public static ObjectMapper mapper(int maxNestingDepth, int maxStringLength)
    {
        return mapper(StreamReadConstraints.builder().maxNestingDepth(maxNestingDepth).maxStringLength(maxStringLength).build());
    }

    private static ObjectMapper mapper(StreamReadConstraints constraints)
    {
        ObjectMapper mapper = new ObjectMapper()
                .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        mapper.getFactory().setStreamReadConstraints(constraints);
        return mapper;
    }
}
