package io.handoff.core.config;

import java.util.Collection;
import java.util.Optional;

/** What a mistyped name was likely meant to be: a configuration key, a command-line option or a command. */
public final class Typos
{
    private Typos() {}

    /** The known name closest to an unknown one, if one is close enough to be a likely typo of it. */
    public static Optional<String> closest(String unknown, Collection<String> known)
    {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : known) {
            int distance = editDistance(unknown, candidate);
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        int tolerance = Math.max(2, unknown.length() / 4);
        return bestDistance <= tolerance ? Optional.ofNullable(best) : Optional.empty();
    }

    static int editDistance(String a, String b)
    {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
