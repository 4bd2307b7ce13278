package io.handoff.cli;

import javax.lang.model.SourceVersion;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * The project {@code handoff sdk new-plugin} writes: templates under {@code io/handoff/cli/sdk/templates/} with
 * {@code @NAME@} placeholders, filled in with the plugin's id and package and with the versions this Handoff was built
 * with ({@code io/handoff/cli/sdk/versions.properties}, filtered by the build from the parent POM).
 */
final class PluginTemplate
{
    /** The same rule the plugin registry applies to provider ids. */
    private static final Pattern ID = Pattern.compile("[a-z][a-z0-9-]{0,63}");
    private static final Pattern PLACEHOLDER = Pattern.compile("@([A-Za-z_][A-Za-z0-9_-]*)@");
    private static final Pattern VERSION = Pattern.compile("(\\d+)\\.(\\d+)\\.(\\d+).*");
    private static final String TEMPLATES = "sdk/templates/";

    enum Kind
    {
        TRANSFER("transfer", "io.handoff.spi.transfer.TransferBackendProvider",
                List.of("SharedFileTransferProvider", "SharedFileSettings", "SharedFileBackend", "SharedFilePeer"),
                List.of("SharedFileTransferContractTest")),
        ATTENTION("attention", "io.handoff.spi.attention.AttentionBackendProvider",
                List.of("SimpleAttentionProvider", "SimpleAttention"),
                List.of("SimpleAttentionTest"));

        private final String label;
        private final String service;
        private final List<String> mainClasses;
        private final List<String> testClasses;

        Kind(String label, String service, List<String> mainClasses, List<String> testClasses)
        {
            this.label = label;
            this.service = service;
            this.mainClasses = mainClasses;
            this.testClasses = testClasses;
        }

        String label()
        {
            return label;
        }

        static Kind parse(String kind)
        {
            for (Kind candidate : values()) {
                if (candidate.label.equals(kind == null ? "" : kind.toLowerCase(Locale.ROOT))) {
                    return candidate;
                }
            }
            throw new IllegalArgumentException("--kind is '" + kind + "': use transfer or attention");
        }
    }

    private final Properties versions;

    private PluginTemplate(Properties versions)
    {
        this.versions = versions;
    }

    static PluginTemplate forCurrentEngine()
    {
        Properties versions = new Properties();
        try (InputStream in = PluginTemplate.class.getResourceAsStream("sdk/versions.properties")) {
            if (in == null) {
                throw new IllegalStateException("this handoff-cli has no sdk/versions.properties: it was built without its resources");
            }
            versions.load(in);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new PluginTemplate(versions);
    }

    /** Refuses what is not a plugin id: lower-case letters, digits and '-', starting with a letter, at most 64 characters. */
    static void checkId(String id)
    {
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("--id '" + id + "' is not a plugin id: use lower-case letters, digits and '-', starting with "
                    + "a letter, at most 64 characters (e.g. my-transfer)");
        }
    }

    /** Writes the project and returns the paths written, relative to {@code directory}. */
    List<Path> write(String id, Kind kind, Path directory)
    {
        requireNonNull(kind, "kind is null");
        requireNonNull(directory, "directory is null");
        checkId(id);
        checkEmpty(directory);
        String packageName = packageOf(id);
        Map<String, String> values = values(id, kind, packageName);

        Map<Path, String> files = new LinkedHashMap<>();
        files.put(Path.of("pom.xml"), fill("pom.xml.tmpl", values));
        files.put(Path.of(".gitignore"), fill("gitignore.tmpl", values));
        String prefix = kind.label + "/";
        files.put(Path.of("src/main/resources/reference.conf"), fill(prefix + "reference.conf.tmpl", values));
        files.put(Path.of("src/main/resources/META-INF/services", kind.service), fill(prefix + "services.tmpl", values));
        Path packagePath = Path.of(packageName.replace('.', '/'));
        for (String name : kind.mainClasses) {
            files.put(Path.of("src/main/java").resolve(packagePath).resolve(name + ".java"), fill(prefix + name + ".java.tmpl", values));
        }
        for (String name : kind.testClasses) {
            files.put(Path.of("src/test/java").resolve(packagePath).resolve(name + ".java"), fill(prefix + name + ".java.tmpl", values));
        }

        List<Path> written = new ArrayList<>();
        try {
            for (Map.Entry<Path, String> file : files.entrySet()) {
                Path target = directory.resolve(file.getKey());
                Files.createDirectories(target.getParent());
                Files.writeString(target, file.getValue(), StandardCharsets.UTF_8);
                written.add(file.getKey());
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write the plugin project into " + directory + ": " + e + "; choose a writable folder", e);
        }
        return written;
    }

    /** {@code org.example.handoff.<id without '-'>}, kept a legal Java package name. */
    static String packageOf(String id)
    {
        String segment = id.replace("-", "");
        String packageName = "org.example.handoff." + segment;
        return SourceVersion.isName(packageName) ? packageName : packageName + "_";
    }

    /** {@code >=0.1.3 & <0.2.0} for Handoff 0.1.3: this version line, as PF4J's version expressions write it. */
    static String pluginRequires(String handoffVersion)
    {
        Matcher matcher = VERSION.matcher(handoffVersion);
        if (!matcher.matches()) {
            throw new IllegalStateException("this Handoff's version '" + handoffVersion + "' is not major.minor.patch; cannot write Plugin-Requires");
        }
        int major = Integer.parseInt(matcher.group(1));
        int minor = Integer.parseInt(matcher.group(2));
        return ">=" + matcher.group(1) + "." + matcher.group(2) + "." + matcher.group(3) + " & <" + major + "." + (minor + 1) + ".0";
    }

    private Map<String, String> values(String id, Kind kind, String packageName)
    {
        String handoffVersion = version("handoff.version");
        Map<String, String> values = new LinkedHashMap<>();
        values.put("ID", id);
        values.put("KIND", kind.label);
        values.put("PACKAGE", packageName);
        values.put("GROUP_ID", packageName);
        values.put("PROVIDER", "the authors of " + id);
        values.put("HANDOFF_VERSION", handoffVersion);
        values.put("PLUGIN_REQUIRES", pluginRequires(handoffVersion).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"));
        values.put("JAVA_RELEASE", version("java.release"));
        values.put("JUNIT_VERSION", version("junit.version"));
        values.put("ASSERTJ_VERSION", version("assertj.version"));
        for (String plugin : versions.stringPropertyNames()) {
            if (plugin.endsWith("-plugin.version")) {
                values.put("V_" + plugin.substring(0, plugin.length() - ".version".length()), version(plugin));
            }
        }
        values.put("KIT_DEPENDENCY", kind == Kind.TRANSFER ? template("testkit-dependency.xml.tmpl") : "");
        return values;
    }

    private String version(String key)
    {
        String value = versions.getProperty(key);
        if (value == null || value.isBlank() || value.contains("${")) {
            throw new IllegalStateException("sdk/versions.properties has no value for " + key + ": this handoff-cli was built without "
                    + "resource filtering");
        }
        return value;
    }

    private static String fill(String name, Map<String, String> values)
    {
        String text = template(name);
        Matcher matcher = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (matcher.find()) {
            String value = values.get(matcher.group(1));
            if (value == null) {
                throw new IllegalStateException("template " + name + " uses @" + matcher.group(1) + "@, which new-plugin does not fill in");
            }
            matcher.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        matcher.appendTail(out);
        return out.toString();
    }

    private static String template(String name)
    {
        try (InputStream in = PluginTemplate.class.getResourceAsStream(TEMPLATES + name)) {
            if (in == null) {
                throw new IllegalStateException("template " + TEMPLATES + name + " is missing from handoff-cli");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void checkEmpty(Path directory)
    {
        if (Files.exists(directory) && !Files.isDirectory(directory)) {
            throw new IllegalArgumentException(directory + " is a file: new-plugin writes a project into a new or empty folder");
        }
        if (Files.isDirectory(directory)) {
            try (Stream<Path> entries = Files.list(directory)) {
                if (entries.findAny().isPresent()) {
                    throw new IllegalArgumentException(directory + " is not empty: new-plugin writes a project into a new or empty folder, "
                            + "so that it overwrites nothing; choose another DIR");
                }
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot read " + directory + ": " + e.getMessage(), e);
            }
        }
    }
}
