package io.handoff.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.config.ConfigReference;
import io.handoff.core.config.HandoffConfig;
import io.handoff.core.runtime.Engine;
import io.handoff.core.runtime.KvSizing;
import io.handoff.core.runtime.ModelSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "config", mixinStandardHelpOptions = true,
        description = {"Validate the configuration and print every effective value with where it came from.",
                "With --model or --model-path it also shows the KV pool the model would get: bytes per token, pages, bytes and tokens."})
final class ConfigCommand
        implements Callable<Integer>
{
    @Mixin
    EngineOptions options;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Mixin
    TuningOptions tuning;

    @Option(names = "--strict", description = "Exit 2 when a key is unknown (a typo is named with the nearest known key), not only warn.")
    boolean strict;

    @Option(names = "--json", description = "Print one JSON object: settings (key -> value and origin), warnings, and with a model its kv sizing.")
    boolean json;

    @Option(names = "--reference", description = "Print the configuration reference (every key, default, type and description) as Markdown.")
    boolean reference;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        model.applyTo(options.overrides);
        modelPath.applyTo(options.overrides);
        tuning.applyTo(options.overrides);
        PrintWriter out = spec.commandLine().getOut();
        try (Engine engine = Engine.start(options.source())) {
            HandoffConfig config = engine.config();
            if (reference) {
                ConfigReference documentation = config.documentation();
                out.print(documentation.markdown());
                out.flush();
                List<String> undocumented = documentation.undocumented();
                if (!undocumented.isEmpty()) {
                    spec.commandLine().getErr().println("handoff config: keys without a description in their reference.conf: " + String.join(", ", undocumented));
                    return Main.FAILURE;
                }
                return Main.OK;
            }
            if (strict && !config.warnings().isEmpty()) {
                PrintWriter err = spec.commandLine().getErr();
                config.warnings().forEach(warning -> err.println("handoff config: " + warning.replace(" It is ignored.", "")));
                err.println("see 'handoff config --help'; the keys are listed in docs/configuration.md");
                err.flush();
                return Main.USAGE;
            }
            boolean withModel = model.name().isPresent() || modelPath.modelPath != null;
            KvSizing kv = null;
            String modelName = null;
            if (withModel) {
                try (ModelSource source = ModelSource.open(config.config())) {
                    kv = KvSizing.of(config.config(), source);
                    modelName = source.config().name();
                }
            }
            if (json) {
                out.println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(toJson(config, modelName, kv)));
            }
            else {
                printText(out, config, modelName, kv);
            }
            out.flush();
            return Main.OK;
        }
    }

    private static ObjectNode toJson(HandoffConfig config, String modelName, KvSizing kv)
    {
        ObjectNode root = new ObjectMapper().createObjectNode();
        ObjectNode settings = root.putObject("settings");
        for (HandoffConfig.EffectiveValue value : config.effectiveValues()) {
            ObjectNode setting = settings.putObject(value.path());
            // a string as it reads ("30s" -> 30s); numbers, lists and objects as HOCON writes them
            String text = value.value();
            setting.put("value", text.length() >= 2 && text.startsWith("\"") && text.endsWith("\"") && !text.contains("\\")
                    ? text.substring(1, text.length() - 1) : text);
            setting.put("origin", value.origin());
        }
        config.warnings().forEach(root.putArray("warnings")::add);
        if (kv != null) {
            root.put("model", modelName);
            ObjectNode node = root.putObject("kv");
            node.put("bytes_per_token", kv.bytesPerToken());
            node.put("page_size", kv.pageSize());
            node.put("dtype", kv.dtype().name().toLowerCase(java.util.Locale.ROOT));
            node.put("pool_pages", kv.pages());
            node.put("pool_bytes", kv.poolBytes());
            node.put("pool_tokens", kv.poolTokens());
        }
        return root;
    }

    private static void printText(PrintWriter out, HandoffConfig config, String modelName, KvSizing kv)
    {
        int width = config.effectiveValues().stream().mapToInt(v -> v.path().length() + v.value().length()).max().orElse(0) + 4;
        for (HandoffConfig.EffectiveValue value : config.effectiveValues()) {
            String assignment = value.path() + " = " + value.value();
            out.println(assignment + " ".repeat(Math.max(1, width - assignment.length())) + "# " + value.origin());
        }
        if (kv != null) {
            out.printf("# KV pool of %s: %d bytes per token (%s, pages of %d tokens); %d pages = %d MiB = %d tokens%n", modelName, kv.bytesPerToken(),
                    kv.dtype().name().toLowerCase(java.util.Locale.ROOT), kv.pageSize(), kv.pages(), kv.poolBytes() >> 20, kv.poolTokens());
        }
    }
}
