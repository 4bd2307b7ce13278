package io.handoff.core.parallel;

import java.util.Optional;
import java.util.function.Supplier;

/** Starts rank {@code rank} of a group whose leader listens at {@code leader}; empty when the rank joins on its own. */
@FunctionalInterface
public interface RankLauncher
{
    /** Starts nothing: every rank joins with {@code handoff serve --rank R --leader HOST:PORT}. */
    RankLauncher NONE = (rank, leader) -> Optional.empty();

    Optional<Launched> launch(int rank, String leader);

    /** A rank's process on this host, and the last line it wrote (for the error when it exits before joining). */
    record Launched(int rank, Process process, Supplier<Optional<String>> lastLine)
    {
        public Optional<String> lastWords()
        {
            return lastLine.get();
        }
    }
}
