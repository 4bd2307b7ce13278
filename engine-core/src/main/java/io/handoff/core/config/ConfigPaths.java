package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigOrigin;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;

import java.net.URL;
import java.util.Collection;
import java.util.Optional;

/** Small pieces of path and origin handling shared by loading, validation and printing. */
final class ConfigPaths
{
    private ConfigPaths() {}

    /**
     * A value as printed by {@code handoff config} and in validation errors: as written, unless the reference marks
     * its key with a {@code # secret} comment line (API keys, say); then only whether it is empty shows.
     */
    static String render(Config reference, String path, ConfigValue value)
    {
        String rendered = value.render(ConfigRenderOptions.concise());
        boolean empty = rendered.equals("[]") || rendered.equals("\"\"") || rendered.equals("{}");
        return secret(reference, path) && !empty ? "<redacted>" : rendered;
    }

    static boolean secret(Config reference, String path)
    {
        ConfigValue declared;
        try {
            declared = reference.hasPathOrNull(path) ? reference.getValue(path) : null;
        }
        catch (ConfigException e) {
            declared = null;
        }
        return declared != null && declared.origin().comments().stream().anyMatch(comment -> comment.strip().equals("secret"));
    }

    static String quoteKey(String key)
    {
        return ConfigUtil.joinPath(key);
    }

    /** Where a value came from, short enough to print next to it. */
    static String describeOrigin(ConfigOrigin origin)
    {
        URL url = origin.url();
        String line = origin.lineNumber() > 0 ? ":" + origin.lineNumber() : "";
        if (origin.resource() != null && url != null) {
            String where = url.toString();
            int bang = where.lastIndexOf("!/");
            String container = bang > 0 ? where.substring(where.lastIndexOf('/', bang - 1) + 1, bang) : where;
            return origin.resource() + " in " + container + line;
        }
        if (origin.filename() != null) {
            return origin.filename() + line;
        }
        return origin.description();
    }

    /** The known path closest to an unknown one, if one is close enough to be a likely typo. */
    static Optional<String> closest(String unknown, Collection<String> known)
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
