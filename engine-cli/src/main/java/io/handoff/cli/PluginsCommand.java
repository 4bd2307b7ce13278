package io.handoff.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.plugin.PluginEntry;
import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "plugins", mixinStandardHelpOptions = true,
        description = "List every plugin (built-in and third-party JARs): kind, version, capabilities and availability.")
final class PluginsCommand
        implements Callable<Integer>
{
    @Mixin
    EngineOptions options;

    @Option(names = "--json", description = "Print a JSON array instead of a table.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        try (Engine engine = Engine.start(options.source())) {
            PrintWriter out = spec.commandLine().getOut();
            List<PluginEntry> entries = engine.plugins().entries();
            out.println(json ? toJson(entries) : toTable(entries));
            out.flush();
            return Main.OK;
        }
    }

    static String toJson(List<PluginEntry> entries)
            throws Exception
    {
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ArrayNode array = mapper.createArrayNode();
        for (PluginEntry entry : entries) {
            ObjectNode node = array.addObject();
            node.put("id", entry.id());
            node.put("kind", entry.kind());
            node.put("version", entry.version());
            node.put("spiVersion", entry.spiVersion()); // null when the provider failed before reporting one
            node.put("source", entry.source());
            node.put("available", entry.available());
            node.put("reason", entry.reason());
            ArrayNode capabilities = node.putArray("capabilities");
            entry.capabilities().forEach(capabilities::add);
            node.put("description", entry.description());
        }
        return mapper.writeValueAsString(array);
    }

    static String toTable(List<PluginEntry> entries)
    {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"ID", "KIND", "VERSION", "SPI", "SOURCE", "AVAILABLE", "CAPABILITIES / REASON"});
        for (PluginEntry entry : entries) {
            String detail = entry.available() ? String.join(", ", entry.capabilities()) : entry.reason();
            String source = entry.builtin() ? "builtin" : shorten(entry.source());
            // No SPI version for a provider that failed before it reported one: '-', never a made-up 0.
            String spi = entry.spiVersion() == null ? "-" : entry.spiVersion().toString();
            rows.add(new String[] {entry.id(), entry.kind(), entry.version(), spi, source, entry.available() ? "yes" : "no", detail});
        }
        // Columns as wide as their widest cell, so third-party ids and JAR names keep the table aligned.
        int[] widths = new int[rows.getFirst().length - 1];
        for (String[] row : rows) {
            for (int column = 0; column < widths.length; column++) {
                widths[column] = Math.max(widths[column], row[column].length());
            }
        }
        StringBuilder table = new StringBuilder();
        for (String[] row : rows) {
            for (int column = 0; column < widths.length; column++) {
                table.append(row[column]).append(" ".repeat(widths[column] - row[column].length() + 2));
            }
            table.append(row[widths.length]).append('\n');
        }
        return table.toString().stripTrailing();
    }

    private static String shorten(String path)
    {
        int slash = path.lastIndexOf('/');
        return slash >= 0 ? path.substring(slash + 1) : path;
    }
}
