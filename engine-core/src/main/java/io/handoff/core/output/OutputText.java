package io.handoff.core.output;

import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.trace.FinishReason;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A request's output text, built token by token, and where it stops.
 *
 * <p>A token stands for bytes ({@link Tokenizer#tokenBytes}), so a character may span several tokens: bytes that may
 * still become a valid UTF-8 character wait in the decoder, and invalid ones become U+FFFD exactly as
 * {@link Tokenizer#decode} would, so the streamed pieces add up to the text of the whole output. Stop strings are found in the
 * decoded text as it grows; the text ends before the first one. While streaming, the tail that could still
 * turn into a stop string is held back ({@link #stableLength}), so a client never sees part of a stop
 * string. A stop token id ends the output and is not part of the text, nor is an EOS; with {@code noStopTrim} (SGLang's
 * {@code no_stop_trim}) the stop string or token stays in the text. Special tokens add nothing to the text unless
 * {@code skipSpecialTokens} is false; then they add how they are written ({@link Tokenizer#specialTokenText}).
 */
public final class OutputText
{
    /** Why the output ended here: a stop string or a stop token id. */
    public sealed interface Match
            permits StopString, StopToken {}

    public record StopString(String stop) implements Match {}

    public record StopToken(int id) implements Match {}

    private final List<String> stops;
    private final Set<Integer> stopIds;
    private final Set<Integer> eosIds;
    private final boolean keepStop;
    private final boolean skipSpecialTokens;
    private final int longestStop;
    private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
    private final Tokenizer tokenizer;
    private ByteBuffer pending = ByteBuffer.allocate(16);
    private final CharBuffer decoded = CharBuffer.allocate(8);
    private final StringBuilder text = new StringBuilder();
    private int tokens;
    private boolean finished;
    private Match match;

    public OutputText(List<String> stops, Set<Integer> stopIds)
    {
        this(stops, stopIds, new ByteTokenizer());
    }

    public OutputText(List<String> stops, Set<Integer> stopIds, Tokenizer tokenizer)
    {
        this(stops, stopIds, Set.of(), false, true, tokenizer);
    }

    /** The text of an output sampled with {@code options}; {@code eosIds} are the ids that end it unless EOS is ignored. */
    public OutputText(SamplingOptions options, Set<Integer> eosIds, Tokenizer tokenizer)
    {
        this(options.stops(), options.stopTokenIds(), options.ignoreEos() ? Set.of() : eosIds, options.noStopTrim(), options.skipSpecialTokens(),
                tokenizer);
    }

    private OutputText(List<String> stops, Set<Integer> stopIds, Set<Integer> eosIds, boolean keepStop, boolean skipSpecialTokens,
            Tokenizer tokenizer)
    {
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.stops = List.copyOf(requireNonNull(stops, "stops is null"));
        this.stopIds = Set.copyOf(requireNonNull(stopIds, "stopIds is null"));
        this.eosIds = Set.copyOf(requireNonNull(eosIds, "eosIds is null"));
        this.keepStop = keepStop;
        this.skipSpecialTokens = skipSpecialTokens;
        this.longestStop = this.stops.stream().mapToInt(String::length).max().orElse(0);
    }

    /**
     * Adds the next output token. Returns true when the output has just ended at a stop string or a stop
     * token id; tokens after that are ignored.
     */
    public boolean append(int tokenId)
    {
        if (match != null || finished) {
            return false;
        }
        tokens++;
        boolean stopToken = stopIds.contains(tokenId);
        if ((stopToken || eosIds.contains(tokenId)) && !keepStop) {
            if (stopToken) {
                match = new StopToken(tokenId);
            }
            return stopToken;
        }
        byte[] bytes = skipSpecialTokens || !tokenizer.isSpecial(tokenId) ? tokenizer.tokenBytes(tokenId)
                : tokenizer.specialTokenText(tokenId).getBytes(StandardCharsets.UTF_8);
        boolean stopped = false;
        if (bytes.length > 0) {
            if (pending.remaining() < bytes.length) {
                ByteBuffer larger = ByteBuffer.allocate(pending.position() + bytes.length + 16);
                larger.put(pending.flip());
                pending = larger;
            }
            pending.put(bytes);
            int before = text.length();
            decode(false);
            stopped = findStop(before);
        }
        if (stopToken && !stopped) {
            match = new StopToken(tokenId);
            return true;
        }
        return stopped;
    }

    /** The output ended (for whatever reason): the bytes still waiting in the decoder become text. */
    public void finish()
    {
        if (finished) {
            return;
        }
        if (!(match instanceof StopString)) {
            // Bytes of an unfinished character become U+FFFD, as in the tokenizer's decoding of the whole output.
            int before = text.length();
            decode(true);
            if (match == null) {
                findStop(before);
            }
        }
        finished = true;
    }

    private void decode(boolean endOfInput)
    {
        pending.flip();
        CoderResult result;
        do {
            result = decoder.decode(pending, decoded, endOfInput);
            drainDecoded();
        }
        while (result.isOverflow());
        if (endOfInput) {
            do {
                result = decoder.flush(decoded);
                drainDecoded();
            }
            while (result.isOverflow());
        }
        pending.compact();
    }

    private void drainDecoded()
    {
        decoded.flip();
        text.append(decoded);
        decoded.clear();
    }

    private boolean findStop(int appendedFrom)
    {
        if (text.length() == appendedFrom) {
            return false;
        }
        int first = -1;
        String matched = null;
        for (String stop : stops) {
            int index = text.indexOf(stop, Math.max(0, appendedFrom - stop.length() + 1));
            if (index >= 0 && (first < 0 || index < first)) {
                first = index;
                matched = stop;
            }
        }
        if (first < 0) {
            return false;
        }
        text.setLength(keepStop ? first + matched.length() : first);
        match = new StopString(matched);
        return true;
    }

    /** Tokens that count as output: up to and including the one that ended it. */
    public int tokens()
    {
        return tokens;
    }

    public String text()
    {
        return text.toString();
    }

    public Optional<Match> match()
    {
        return Optional.ofNullable(match);
    }

    /** How much of {@link #text} a client may see now: all of it once the output ended, else all but a possible stop-string prefix. */
    public int stableLength()
    {
        if (finished || match != null || longestStop == 0) {
            return text.length();
        }
        for (int k = Math.min(longestStop - 1, text.length()); k > 0; k--) {
            for (String stop : stops) {
                if (k < stop.length() && endsWith(stop, k)) {
                    return text.length() - k;
                }
            }
        }
        return text.length();
    }

    /** Whether the text ends with the first {@code k} characters of {@code stop}. */
    private boolean endsWith(String stop, int k)
    {
        int offset = text.length() - k;
        for (int i = 0; i < k; i++) {
            if (text.charAt(offset + i) != stop.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * How the output ended, given what the scheduler returned: a stop string ends it at the token that completed it
     * (later tokens were already on their way, and the finish reason becomes {@link FinishReason#STOP}); an output that
     * ended on an EOS id names that id as its match. Call after {@link #finish}.
     */
    public Ending ending(int[] outputIds, FinishReason reason, Set<Integer> eosTokenIds)
    {
        int[] ids = outputIds;
        Optional<Match> ended = match();
        if (ended.isPresent()) {
            ids = Arrays.copyOf(ids, Math.min(ids.length, tokens));
            reason = FinishReason.STOP;
        }
        else if (reason == FinishReason.STOP && ids.length > 0 && eosTokenIds.contains(ids[ids.length - 1])) {
            ended = Optional.of(new StopToken(ids[ids.length - 1]));
        }
        return new Ending(ids, reason, ended);
    }

    /** The output's tokens as a client sees them, why it ended, and the stop string or token that ended it, if any. */
    public record Ending(int[] outputIds, FinishReason reason, Optional<Match> match)
    {
        public Ending
        {
            requireNonNull(outputIds, "outputIds is null");
            requireNonNull(reason, "reason is null");
            requireNonNull(match, "match is null");
        }
    }
}
