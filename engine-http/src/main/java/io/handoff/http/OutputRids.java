package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.OutputCount;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

import static java.util.Objects.requireNonNull;

/**
 * The rids of a request's generations and the names that abort several of them. One generation keeps the
 * request's rid; otherwise a rid {@code r} gives {@code r-<i>}, and a rid list (one per prompt of a batch)
 * gives each prompt's outputs its entry ({@code <entry>-<j>} when the prompt has several).
 *
 * @param name the request's rid (the first of a list), for the ids of its answers
 * @param outputs each generation's rid, by output index
 * @param groups the rids that name several generations (by their indexes), for {@code /abort_request}
 */
record OutputRids(String name, List<String> outputs, Map<String, List<Integer>> groups)
{
    OutputRids
    {
        requireNonNull(name, "name is null");
        outputs = List.copyOf(outputs);
        groups = Map.copyOf(groups);
    }

    static OutputRids of(Optional<JsonNode> rid, OutputCount count, Supplier<String> newRid)
    {
        if (rid.isPresent() && rid.get().isArray()) {
            return ofList(rid.get(), count);
        }
        if (rid.isPresent() && !rid.get().isTextual()) {
            throw ApiError.invalid("invalid_type", "rid", "rid must be a string" + (count.batched() ? " or a list of strings, one per prompt" : "")
                    + ", got " + JsonFields.describe(rid.get()));
        }
        String name = rid.map(JsonNode::textValue).orElseGet(newRid);
        if (count.single()) {
            return new OutputRids(name, List.of(name), Map.of());
        }
        List<String> outputs = new ArrayList<>();
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < count.total(); i++) {
            outputs.add(name + "-" + i);
            all.add(i);
        }
        return new OutputRids(name, outputs, Map.of(name, all));
    }

    private static OutputRids ofList(JsonNode list, OutputCount count)
    {
        if (!count.batched()) {
            throw ApiError.invalid("invalid_type", "rid", "rid is a list, but the prompt is not: send one rid as a string");
        }
        if (list.size() != count.prompts()) {
            throw ApiError.invalid("invalid_value", "rid", "rid lists " + list.size() + " ids for " + count.prompts()
                    + " prompts; send one per prompt (or one string)");
        }
        List<String> outputs = new ArrayList<>();
        Map<String, List<Integer>> groups = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        for (int p = 0; p < list.size(); p++) {
            JsonNode entry = list.get(p);
            if (!entry.isTextual() || entry.textValue().isEmpty()) {
                throw ApiError.invalid("invalid_type", "rid", "rid[" + p + "] must be a non-empty string, got " + JsonFields.describe(entry));
            }
            if (!seen.add(entry.textValue())) {
                throw ApiError.invalid("invalid_value", "rid", "rid[" + p + "] = '" + entry.textValue() + "' appears twice; rids must be unique");
            }
            List<Integer> indexes = new ArrayList<>();
            for (int j = 0; j < count.perPrompt(); j++) {
                outputs.add(count.perPrompt() == 1 ? entry.textValue() : entry.textValue() + "-" + j);
                indexes.add(p * count.perPrompt() + j);
            }
            if (count.perPrompt() > 1) {
                groups.put(entry.textValue(), indexes);
            }
        }
        return new OutputRids(list.get(0).textValue(), outputs, groups);
    }
}
