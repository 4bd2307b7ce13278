package io.handoff.bench.serving;

import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.demo.Workload;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The request sets {@code bench serving} sends: token-id prompts drawn from a seed, every id below the served model's
 * vocabulary size, so they are valid for any model without a tokenizer on this side, and the same seed gives the same
 * requests on every run and against every URL.
 */
public enum Dataset
{
    /** One long common prefix (the prefix cache's and early send's case) and a short question of each request's own. */
    SHARED_PREFIX("shared-prefix"),
    /** Random prompt lengths and output lengths in a range. */
    RANDOM("random"),
    /** Long prompts, few output tokens: prefill-bound. */
    LONG_PROMPT("long-prompt"),
    /** Long prompts with few output tokens alternating with short prompts that decode long: the load PD is for. */
    MIXED("mixed"),
    /**
     * Conversations of {@value #TURNS} turns under one shared system prompt, each turn resending the whole history: the
     * system prompt, every earlier question and answer, then a new question. Sent turn by turn (every conversation's first
     * turn, then every second one, ...), so that a conversation's earlier turn has usually finished when the next is sent;
     * the history's answers are drawn from the seed like the questions (the bench does not feed outputs back), so what a
     * decode's prefix cache can reuse is the earlier turns' prompts: the history up to the last answer.
     */
    MULTI_TURN("multi-turn");

    static final int SHARED_PREFIX_TOKENS = 1024;
    static final int LONG_PROMPT_TOKENS = 2048;
    static final int FEW_OUTPUT_TOKENS = 4;
    static final int TURNS = 4;
    static final int SYSTEM_PROMPT_TOKENS = 512;

    private final String label;

    Dataset(String label)
    {
        this.label = label;
    }

    public String label()
    {
        return label;
    }

    public static Dataset parse(String text)
    {
        for (Dataset dataset : values()) {
            if (dataset.label.equals(text.toLowerCase(Locale.ROOT))) {
                return dataset;
            }
        }
        throw new IllegalArgumentException("--dataset must be one of shared-prefix, random, long-prompt, mixed, multi-turn; was '" + text + "'");
    }

    /**
     * {@code count} requests; {@code maxNewTokens} is the output length of shared-prefix requests and of mixed's short ones,
     * and the upper end of random's. Prompt and output together stay within {@code maxContext}.
     */
    public List<BenchRequest> requests(int count, long seed, int vocabSize, int maxContext, int maxNewTokens)
    {
        if (count < 1) {
            throw new IllegalArgumentException("--requests must be at least 1, was " + count);
        }
        if (maxNewTokens < 1 || maxNewTokens >= maxContext) {
            throw new IllegalArgumentException("--max-new-tokens must be in 1.." + (maxContext - 1) + " (the model's context is " + maxContext
                    + " tokens), was " + maxNewTokens);
        }
        SplittableRandom random = new SplittableRandom(seed);
        int room = maxContext - maxNewTokens;
        if (this == MULTI_TURN) {
            return multiTurn(count, random, vocabSize, room, maxNewTokens);
        }
        int[] prefix = ids(random, Math.min(SHARED_PREFIX_TOKENS, room / 2), vocabSize);
        List<BenchRequest> requests = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            requests.add(switch (this) {
                case SHARED_PREFIX -> new BenchRequest(i, concat(prefix, ids(random, random.nextInt(16, 65), vocabSize)), maxNewTokens);
                case RANDOM -> {
                    int output = random.nextInt(Math.max(1, maxNewTokens / 4), maxNewTokens + 1);
                    yield new BenchRequest(i, ids(random, random.nextInt(32, Math.max(33, Math.min(1024, maxContext - output))), vocabSize), output);
                }
                case LONG_PROMPT -> longPrompt(i, random, vocabSize, maxContext);
                case MIXED -> i % 2 == 0 ? longPrompt(i, random, vocabSize, maxContext)
                        : new BenchRequest(i, ids(random, Math.min(32, room), vocabSize), maxNewTokens);
                case MULTI_TURN -> throw new IllegalStateException("multi-turn requests are built whole (multiTurn)");
            });
        }
        return requests;
    }

    /**
     * With the served model's tokenizer at hand ({@code --model-path}): shared-prefix as text, the demo's few-shot
     * workload (eight worked examples, then a question of each request's own) encoded as the server would.
     */
    public static List<BenchRequest> fewShot(Tokenizer tokenizer, int count, long seed, int maxContext, int maxNewTokens)
    {
        if (count < 1) {
            throw new IllegalArgumentException("--requests must be at least 1, was " + count);
        }
        Workload workload = Workload.fewShot(count, seed);
        List<BenchRequest> requests = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int[] ids = tokenizer.encodePrompt(workload.prompt(i));
            if (ids.length + maxNewTokens > maxContext) {
                throw new IllegalArgumentException("the few-shot prompt is " + ids.length + " tokens with this tokenizer; with --max-new-tokens "
                        + maxNewTokens + " it exceeds the model's context of " + maxContext + " tokens");
            }
            requests.add(new BenchRequest(i, ids, maxNewTokens));
        }
        return requests;
    }

    /**
     * {@code count} turns of {@code ceil(count / TURNS)} conversations, turn-major; a conversation's last turn fits
     * {@code room} tokens with its output.
     */
    private static List<BenchRequest> multiTurn(int count, SplittableRandom random, int vocabSize, int room, int maxNewTokens)
    {
        int conversations = Math.ceilDiv(count, TURNS);
        // a turn adds a question and an answer: what is left after the system prompt, shared by the turns
        int system = Math.min(SYSTEM_PROMPT_TOKENS, room / 2);
        int perTurn = Math.max(2, (room - system) / TURNS);
        int answer = Math.max(1, Math.min(maxNewTokens, perTurn / 2));
        int question = Math.max(1, Math.min(64, perTurn - answer));
        int[] systemPrompt = ids(random, system, vocabSize);
        List<int[]> histories = new ArrayList<>();
        for (int c = 0; c < conversations; c++) {
            histories.add(systemPrompt);
        }
        List<BenchRequest> requests = new ArrayList<>(count);
        for (int turn = 0; turn < TURNS && requests.size() < count; turn++) {
            for (int c = 0; c < conversations && requests.size() < count; c++) {
                int[] prompt = concat(histories.get(c), ids(random, random.nextInt(Math.max(1, question / 2), question + 1), vocabSize));
                requests.add(new BenchRequest(requests.size(), prompt, maxNewTokens));
                histories.set(c, concat(prompt, ids(random, answer, vocabSize)));
            }
        }
        return requests;
    }

    private static BenchRequest longPrompt(int index, SplittableRandom random, int vocabSize, int maxContext)
    {
        int output = Math.min(FEW_OUTPUT_TOKENS, maxContext - 1);
        int length = Math.min(LONG_PROMPT_TOKENS + random.nextInt(0, 512), maxContext - output);
        return new BenchRequest(index, ids(random, length, vocabSize), output);
    }

    private static int[] ids(SplittableRandom random, int length, int vocabSize)
    {
        return random.ints(Math.max(1, length), 0, vocabSize).toArray();
    }

    private static int[] concat(int[] a, int[] b)
    {
        int[] joined = new int[a.length + b.length];
        System.arraycopy(a, 0, joined, 0, a.length);
        System.arraycopy(b, 0, joined, a.length, b.length);
        return joined;
    }
}
