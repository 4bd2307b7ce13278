package io.handoff.http.fields;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.output.LogprobTrace;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.base.JsonFields;

import java.util.List;
import java.util.function.IntUnaryOperator;

/**
 * Log probabilities in the shapes clients parse: SGLang's {@code meta_info} triples {@code [logprob, token_id, text]},
 * OpenAI completions' {@code {tokens, token_logprobs, top_logprobs, text_offset}} and chat's
 * {@code {content: [{token, logprob, bytes, top_logprobs}]}}. A position without a log probability (the first prompt
 * position reported) is null where the shape allows it.
 */
public final class LogprobJson
{
    /** What vLLM reports for a log probability that underflowed: JSON has no infinity. */
    private static final float FLOOR = -9999f;

    private LogprobJson() {}

    /**
     * Adds SGLang's {@code input_token_logprobs} and {@code output_token_logprobs} (and, with alternatives asked for,
     * {@code input_top_logprobs} and {@code output_top_logprobs}) for the first {@code outputCount} output tokens. Every
     * chunk of a stream carries them all so far, the prompt's included, as SGLang's cumulative {@code meta_info} does.
     */
    public static void sglang(ObjectNode meta, LogprobTrace trace, int[] outputIds, int outputCount, TokenTexts texts)
    {
        boolean text = trace.options().tokenText();
        int topN = trace.options().topN();
        boolean top = topN > 0;
        ArrayNode input = meta.putArray("input_token_logprobs");
        ArrayNode inputTop = top ? meta.putArray("input_top_logprobs") : null;
        for (int p = trace.promptFrom(); p < trace.promptIds().length; p++) {
            TokenLogprob entry = trace.promptAt(p);
            triple(input, entry == null ? null : entry.logprob(), trace.promptIds()[p], text, texts);
            if (top) {
                topTriples(inputTop, entry, topN, text, texts);
            }
        }
        ArrayNode output = meta.putArray("output_token_logprobs");
        ArrayNode outputTop = top ? meta.putArray("output_top_logprobs") : null;
        for (int i = 0; i < outputCount; i++) {
            TokenLogprob entry = outputAt(trace, i);
            triple(output, entry == null ? null : entry.logprob(), outputIds[i], text, texts);
            if (top) {
                topTriples(outputTop, entry, topN, text, texts);
            }
        }
    }

    /**
     * OpenAI completions' {@code logprobs} for output tokens {@code from} (inclusive) to {@code to}, after the prompt's
     * reported positions when {@code withPrompt} (echo); {@code text_offset} counts from {@code offset}, each token
     * advancing it by {@code width} (its characters in the choice's text).
     */
    public static ObjectNode completions(LogprobTrace trace, int[] outputIds, int from, int to, boolean withPrompt, int offset,
            IntUnaryOperator promptWidth, IntUnaryOperator outputWidth, TokenTexts texts)
    {
        ObjectNode node = JsonFields.MAPPER.createObjectNode();
        ArrayNode tokens = node.putArray("tokens");
        ArrayNode values = node.putArray("token_logprobs");
        ArrayNode tops = node.putArray("top_logprobs");
        ArrayNode offsets = node.putArray("text_offset");
        int at = offset;
        if (withPrompt) {
            for (int p = trace.promptFrom(); p < trace.promptIds().length; p++) {
                int id = trace.promptIds()[p];
                completionEntry(tokens, values, tops, id, trace.promptAt(p), trace.options().topN(), texts);
                offsets.add(at);
                at += promptWidth.applyAsInt(id);
            }
        }
        for (int i = from; i < to; i++) {
            completionEntry(tokens, values, tops, outputIds[i], outputAt(trace, i), trace.options().topN(), texts);
            offsets.add(at);
            at += outputWidth.applyAsInt(outputIds[i]);
        }
        return node;
    }

    /** OpenAI chat's {@code logprobs} for output tokens {@code from} (inclusive) to {@code to}. */
    public static ObjectNode chat(List<TokenLogprob> output, int[] outputIds, int from, int to, int topN, TokenTexts texts)
    {
        ObjectNode node = JsonFields.MAPPER.createObjectNode();
        ArrayNode content = node.putArray("content");
        for (int i = from; i < to; i++) {
            TokenLogprob entry = i < output.size() ? output.get(i) : null;
            ObjectNode item = chatEntry(content.addObject(), outputIds[i], entry == null ? null : entry.logprob(), texts);
            ArrayNode top = item.putArray("top_logprobs");
            if (entry != null) {
                for (int k = 0; k < Math.min(topN, entry.topIds().length); k++) {
                    chatEntry(top.addObject(), entry.topIds()[k], entry.topLogprobs()[k], texts);
                }
            }
        }
        node.putNull("refusal");
        return node;
    }

    private static ObjectNode chatEntry(ObjectNode item, int id, Float logprob, TokenTexts texts)
    {
        item.put("token", texts.text(id));
        putLogprob(item, "logprob", logprob);
        ArrayNode bytes = item.putArray("bytes");
        for (byte b : texts.bytes(id)) {
            bytes.add(b & 0xff);
        }
        return item;
    }

    /** One position: the token, its log probability, and the alternatives with the chosen token among them (as OpenAI returns). */
    private static void completionEntry(ArrayNode tokens, ArrayNode values, ArrayNode tops, int id, TokenLogprob entry, int topN,
            TokenTexts texts)
    {
        tokens.add(texts.text(id));
        if (entry == null) {
            values.addNull();
            tops.addNull();
            return;
        }
        values.add(clamped(entry.logprob()));
        ObjectNode top = tops.addObject();
        for (int k = 0; k < Math.min(topN, entry.topIds().length); k++) {
            top.put(texts.text(entry.topIds()[k]), clamped(entry.topLogprobs()[k]));
        }
        if (!top.has(texts.text(id))) {
            top.put(texts.text(id), clamped(entry.logprob()));
        }
    }

    private static void triple(ArrayNode into, Float logprob, int id, boolean text, TokenTexts texts)
    {
        ArrayNode triple = into.addArray();
        if (logprob == null) {
            triple.addNull();
        }
        else {
            triple.add(clamped(logprob));
        }
        triple.add(id);
        if (text) {
            triple.add(texts.text(id));
        }
        else {
            triple.addNull();
        }
    }

    private static void topTriples(ArrayNode into, TokenLogprob entry, int topN, boolean text, TokenTexts texts)
    {
        if (entry == null) {
            into.addNull();
            return;
        }
        ArrayNode position = into.addArray();
        for (int k = 0; k < Math.min(topN, entry.topIds().length); k++) {
            triple(position, entry.topLogprobs()[k], entry.topIds()[k], text, texts);
        }
    }

    private static TokenLogprob outputAt(LogprobTrace trace, int i)
    {
        return i < trace.output().size() ? trace.output().get(i) : null;
    }

    private static void putLogprob(ObjectNode node, String name, Float logprob)
    {
        if (logprob == null) {
            node.putNull(name);
        }
        else {
            node.put(name, clamped(logprob));
        }
    }

    private static float clamped(float logprob)
    {
        return Float.isNaN(logprob) || logprob < FLOOR ? FLOOR : logprob;
    }
}
