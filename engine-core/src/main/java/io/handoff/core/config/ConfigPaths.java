package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigOrigin;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;

import java.net.URL;

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
}
