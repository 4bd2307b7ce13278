package io.handoff.benchmarks.model;

import io.handoff.core.model.tokenizer.SentencePieceTokenizer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * SentencePiece BPE (GGUF {@code llama} vocabularies) on a long text of few distinct pieces, where every position is a
 * merge candidate: the case a merge loop that rescans the text would make quadratic. Ten times the characters should
 * cost about ten times the time; the reference is the text's own pass that replaces spaces with the SentencePiece
 * space, which the tokenizer does too.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class SentencePieceBenchmark
{
    private static final String SPACE = "\u2581";

    /** Characters of text: two thirds "abab...", one third " ab ab ...". */
    @Param({"25000", "250000"})
    public int chars;

    private SentencePieceTokenizer tokenizer;
    private String text;

    @Setup
    public void setUp()
    {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Float> scores = new ArrayList<>(List.of(0f, 0f, 0f));
        List<Integer> types = new ArrayList<>(List.of(2, 3, 3));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            scores.add(0f);
            types.add(6);
        }
        String[] pieces = {SPACE, "a", "b", "ab", "abab", SPACE + "ab"};
        float[] pieceScores = {-10, -10, -10, -1, -2, -3};
        for (int i = 0; i < pieces.length; i++) {
            tokens.add(pieces[i]);
            scores.add(pieceScores[i]);
            types.add(1);
        }
        tokenizer = SentencePieceTokenizer.of(tokens, scores, types, 1, 2, true, false, true);
        text = "ab".repeat(chars / 3) + " ab".repeat(chars / 9);
    }

    @Benchmark
    public int[] encode()
    {
        return tokenizer.encode(text, false);
    }

    @Benchmark
    public String replaceSpacesReference()
    {
        return text.replace(" ", SPACE);
    }
}
