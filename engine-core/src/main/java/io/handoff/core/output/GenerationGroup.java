package io.handoff.core.output;

import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationParams;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The generations of one request: every prompt of a batch times its outputs ({@code n}), in SGLang's order
 * (prompt-major: output {@code i} is prompt {@code i / perPrompt}'s output {@code i % perPrompt}). Each gets its own
 * rid, room ({@code bootstrap_room + i}) and seed ({@code seed + i % perPrompt}); they run concurrently and their
 * events reach one {@link Sink}, one at a time.
 *
 * <p>A prompt with several outputs is computed once: on a server that computes prompts, a one-token run of it
 * ({@link GenerationParams#promptRun}) ends before its outputs start, so they find its KV in the prefix cache.
 *
 * <p>The group ends as one request: when an output fails, the others are aborted and the group reports that
 * failure; when the client is gone (a sink write fails), all are aborted; {@link #abort} (also by the group's
 * rid, see {@link Registry#nameGroup}) aborts all. It is the engine's n / best_of fan-out for every front end: the
 * HTTP APIs map its result to their responses and errors.
 */
public final class GenerationGroup
        implements AutoCloseable
{
    /** Where a group's generations are started and its rids named: the server's book of requests in flight. */
    public interface Registry
    {
        /** Registers and submits a generation, computing its output's log probabilities when {@code scored}. */
        Generation start(GenerationParams params, boolean scored);

        /** Makes {@code rid} abort the group through {@code abort} until the returned handle is closed. */
        AutoCloseable nameGroup(String rid, Runnable abort);

        /** A rid unique within this process. */
        String newRid();
    }

    /**
     * How many outputs a request asks for: {@code prompts} prompts (a batch), each sampled {@code perPrompt} times
     * ({@code n}, or {@code best_of} candidates), of which {@code returned} are returned per prompt.
     */
    public record Shape(int prompts, int perPrompt, int returned)
    {
        public Shape
        {
            if (prompts < 1 || perPrompt < 1 || returned < 1 || returned > perPrompt) {
                throw new IllegalArgumentException("a group needs at least one prompt and 1 <= returned <= perPrompt, got " + prompts + " prompts, "
                        + perPrompt + " per prompt, " + returned + " returned");
            }
        }

        public int total()
        {
            return prompts * perPrompt;
        }
    }

    /** A prompt run (the shared prompt computed once) failed before any output started. */
    public static final class PromptRunFailed
            extends RuntimeException
    {
        private final transient Generation.Outcome outcome;

        PromptRunFailed(Generation.Outcome outcome)
        {
            super(outcome.error().orElse("the prompt run failed"));
            this.outcome = outcome;
        }

        public Generation.Outcome outcome()
        {
            return outcome;
        }
    }

    /** Receives every output's growth and end, one call at a time; throws {@link IOException} when the client is gone. */
    public interface Sink
    {
        Sink NONE = (index, generation) -> {};

        void onToken(int index, Generation generation)
                throws IOException;

        /** Output {@code index} ended without failing (not called after the client is gone or the group failed). */
        default void onEnd(int index, Generation.Outcome outcome)
                throws IOException {}
    }

    /**
     * How the group ended.
     *
     * @param outcomes every output's outcome, by index
     * @param failure the lowest-index output that failed; the client is told its error
     * @param clientGone the client disconnected, and every output was aborted for it
     * @param cumulativeLogprobs each output's {@link Generation#cumulativeLogprob} (NaN unless the group was scored)
     */
    public record Result(List<Generation.Outcome> outcomes, Optional<Generation.Outcome> failure, boolean clientGone, List<Double> cumulativeLogprobs)
    {
        public Result
        {
            outcomes = List.copyOf(outcomes);
            requireNonNull(failure, "failure is null");
            cumulativeLogprobs = List.copyOf(cumulativeLogprobs);
        }

        /**
         * OpenAI's {@code best_of}: of each prompt's {@code count.perPrompt()} candidates, the indexes of the
         * {@code count.returned()} with the highest cumulative log probability, most likely first (ties: the lower index).
         * Throws {@link IllegalStateException} when the engine returned no log probability for a candidate.
         */
        public List<Integer> best(Shape count)
        {
            List<Integer> chosen = new ArrayList<>();
            for (int prompt = 0; prompt < count.prompts(); prompt++) {
                List<Integer> candidates = new ArrayList<>();
                for (int j = 0; j < count.perPrompt(); j++) {
                    int index = prompt * count.perPrompt() + j;
                    if (Double.isNaN(cumulativeLogprobs.get(index))) {
                        throw new IllegalStateException("best_of ranks completions by their log probability, and the engine returned none for candidate "
                                + index + "; send the request without best_of");
                    }
                    candidates.add(index);
                }
                candidates.sort(java.util.Comparator.comparingDouble((Integer index) -> -cumulativeLogprobs.get(index))
                        .thenComparingInt(index -> index));
                chosen.addAll(candidates.subList(0, count.returned()));
            }
            return chosen;
        }
    }

    private final Registry generations;
    private final List<GenerationParams> outputs;
    // best_of: every output's log probabilities are computed, to rank them
    private final boolean scored;
    private final Object lock = new Object();
    // Held while writing to the client: one write at a time, and none after the first that failed.
    private final Object writes = new Object();
    // Guarded by lock: the generations submitted (by output index; prompt runs apart), what was aborted, how it ended.
    private final Map<Integer, Generation> started = new LinkedHashMap<>();
    private final List<Generation> promptRuns = new ArrayList<>();
    private final List<AutoCloseable> names = new ArrayList<>();
    private final Set<Integer> abortedOutputs = new HashSet<>();
    private boolean aborted;
    private boolean failed;
    private boolean clientGone;

    private GenerationGroup(Registry generations, List<GenerationParams> outputs, boolean scored)
    {
        this.generations = generations;
        this.outputs = List.copyOf(outputs);
        this.scored = scored;
    }

    /**
     * Starts the group: {@code outputs} are every prompt's outputs in prompt-major order (each with its own rid, room and
     * seed, see {@link GenerationParams#forOutput}); {@code names} are the rids that abort some of them (a batch's
     * per-prompt rids) or all. When {@code computesPrompts} and a prompt has several outputs, each prompt is first run
     * once ({@link GenerationParams#promptRun}) so that its outputs share its KV. Throws {@link PromptRunFailed} when such
     * a run fails, and the scheduler's refusal of an output; either before any output ran.
     */
    public static GenerationGroup start(Registry generations, List<GenerationParams> prompts, List<GenerationParams> outputs, Shape shape,
            Map<String, List<Integer>> names, boolean computesPrompts)
            throws InterruptedException
    {
        requireNonNull(generations, "generations is null");
        if (prompts.size() != shape.prompts() || outputs.size() != shape.total()) {
            throw new IllegalArgumentException(prompts.size() + " prompts and " + outputs.size() + " outputs for " + shape);
        }
        GenerationGroup group = new GenerationGroup(generations, outputs, shape.perPrompt() > shape.returned());
        try {
            for (Map.Entry<String, List<Integer>> name : names.entrySet()) {
                List<Integer> indexes = name.getValue();
                AutoCloseable handle = generations.nameGroup(name.getKey(), () -> group.abort(indexes));
                synchronized (group.lock) {
                    group.names.add(handle);
                }
            }
            if (shape.perPrompt() > 1 && computesPrompts) {
                group.runPrompts(prompts);
            }
            for (int i = 0; i < outputs.size(); i++) {
                group.submit(i);
            }
            return group;
        }
        catch (RuntimeException | InterruptedException e) {
            group.close();
            throw e;
        }
    }

    /** Each prompt once, concurrently, to its end; a prompt run that fails is the group's failure. */
    private void runPrompts(List<GenerationParams> prompts)
            throws InterruptedException
    {
        for (GenerationParams prompt : prompts) {
            Generation run = generations.start(prompt.promptRun("prompt-" + generations.newRid()), false);
            boolean abortNow;
            synchronized (lock) {
                promptRuns.add(run);
                abortNow = aborted;
            }
            if (abortNow) {
                run.abort();
            }
        }
        List<Generation> runs;
        synchronized (lock) {
            runs = List.copyOf(promptRuns);
        }
        try {
            for (Generation run : runs) {
                Generation.Outcome outcome = run.run(Generation.Sink.NONE);
                if (outcome.failed()) {
                    throw new PromptRunFailed(outcome);
                }
            }
        }
        finally {
            // their pages back and their rids out of the books before the outputs start
            runs.forEach(Generation::close);
            synchronized (lock) {
                promptRuns.clear();
            }
        }
    }

    private void submit(int index)
    {
        Generation generation = generations.start(outputs.get(index), scored);
        boolean abortNow;
        synchronized (lock) {
            started.put(index, generation);
            abortNow = aborted || abortedOutputs.contains(index);
        }
        if (abortNow) {
            generation.abort();
        }
    }

    /** Aborts every output: {@link #run} then reports them {@code ABORT}. */
    public void abort()
    {
        List<Generation> all = new ArrayList<>();
        synchronized (lock) {
            aborted = true;
            all.addAll(promptRuns);
            all.addAll(started.values());
        }
        all.forEach(Generation::abort);
    }

    /** Aborts the outputs at {@code indexes} (those of one prompt of a batch, named by its rid). */
    private void abort(List<Integer> indexes)
    {
        List<Generation> all = new ArrayList<>();
        synchronized (lock) {
            abortedOutputs.addAll(indexes);
            indexes.stream().map(started::get).filter(java.util.Objects::nonNull).forEach(all::add);
        }
        all.forEach(Generation::abort);
    }

    /** Runs every output to its end (concurrently when there are several), feeding {@code sink}. */
    public Result run(Sink sink)
            throws InterruptedException
    {
        requireNonNull(sink, "sink is null");
        List<Generation> generations;
        synchronized (lock) {
            generations = List.copyOf(started.values());
        }
        Generation.Outcome[] outcomes = new Generation.Outcome[generations.size()];
        if (generations.size() == 1) {
            outcomes[0] = runOne(0, generations.get(0), sink);
        }
        else {
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < generations.size(); i++) {
                int index = i;
                threads.add(Thread.ofVirtual().name("generation-" + generations.get(i).rid()).start(() -> {
                    try {
                        outcomes[index] = runOne(index, generations.get(index), sink);
                    }
                    catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
            }
            try {
                for (Thread thread : threads) {
                    thread.join();
                }
            }
            catch (InterruptedException e) {
                abort();
                threads.forEach(Thread::interrupt);
                throw e;
            }
        }
        Optional<Generation.Outcome> failure = Arrays.stream(outcomes).filter(outcome -> outcome != null && outcome.failed()).findFirst();
        List<Double> scores = generations.stream().map(Generation::cumulativeLogprob).toList();
        synchronized (lock) {
            return new Result(Arrays.asList(outcomes), failure, clientGone, scores);
        }
    }

    private Generation.Outcome runOne(int index, Generation generation, Sink sink)
            throws InterruptedException
    {
        Generation.Outcome outcome = generation.run(g -> deliver(() -> sink.onToken(index, g)));
        if (outcome.failed()) {
            synchronized (lock) {
                failed = true;
            }
            abort();
            return outcome;
        }
        synchronized (lock) {
            if (failed || clientGone || outcome.clientGone()) {
                return outcome;
            }
        }
        try {
            deliver(() -> sink.onEnd(index, outcome));
        }
        catch (IOException e) {
            // the client is gone: every output is aborted already
        }
        return outcome;
    }

    private interface Delivery
    {
        void run()
                throws IOException;
    }

    /**
     * One write to the client at a time; the first that fails aborts every output, and no write follows it. Only that
     * write's generation sees the failure (and counts the disconnect): the others are aborted, and write nothing more.
     */
    private void deliver(Delivery delivery)
            throws IOException
    {
        synchronized (writes) {
            synchronized (lock) {
                if (clientGone) {
                    return;
                }
            }
            try {
                delivery.run();
            }
            catch (IOException e) {
                synchronized (lock) {
                    clientGone = true;
                }
                abort();
                throw e;
            }
        }
    }

    /** Ends every generation for the server (waiting for their pages, see {@link Generation#close}) and drops the group's names. */
    @Override
    public void close()
    {
        List<Generation> generations = new ArrayList<>();
        List<AutoCloseable> handles;
        synchronized (lock) {
            generations.addAll(promptRuns);
            generations.addAll(started.values());
            handles = List.copyOf(names);
        }
        generations.forEach(Generation::close);
        for (AutoCloseable handle : handles) {
            try {
                handle.close();
            }
            catch (Exception e) {
                throw new IllegalStateException("dropping a group name failed", e);
            }
        }
    }
}
