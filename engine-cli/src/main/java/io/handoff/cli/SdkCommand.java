package io.handoff.cli;

import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code handoff sdk}: the plugin kit of this distribution (sdk/), for people who write plugins. */
@Command(name = "sdk", mixinStandardHelpOptions = true,
        description = "The plugin kit: install it into a Maven repository, or start a plugin project that builds against it.",
        subcommands = {SdkCommand.Install.class, SdkCommand.NewPlugin.class})
final class SdkCommand
        extends CommandGroup
{
    @Command(name = "install", mixinStandardHelpOptions = true,
            description = "Copy the plugin kit (handoff-spi, handoff-transfer-testkit, handoff-engine-core: jars, sources, "
                    + "javadoc, POMs) from this distribution's sdk/ into a Maven repository; no Maven needed.")
    static final class Install
            implements Callable<Integer>
    {
        @Option(names = "--maven-repo", paramLabel = "DIR",
                description = "The Maven repository to install into (default: ~/.m2/repository).")
        Path mavenRepo;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call()
        {
            Path repository = mavenRepo != null ? mavenRepo : Path.of(System.getProperty("user.home"), ".m2", "repository");
            PrintWriter out = spec.commandLine().getOut();
            for (PluginKit.Installed installed : PluginKit.in(Engine.home()).install(repository)) {
                out.println("installed " + installed.coordinates() + " -> " + installed.directory() + " (" + String.join(", ", installed.files()) + ")");
            }
            out.flush();
            return Main.OK;
        }
    }

    @Command(name = "new-plugin", mixinStandardHelpOptions = true,
            description = "Write a standalone Maven project for a new plugin into DIR: a working backend, its reference.conf, "
                    + "its service registration and its tests, building against the installed kit.")
    static final class NewPlugin
            implements Callable<Integer>
    {
        @Option(names = "--id", required = true, paramLabel = "ID",
                description = "The plugin's id: lower-case letters, digits and '-', starting with a letter (also its artifactId).")
        String id;

        @Option(names = "--kind", required = true, paramLabel = "KIND", description = "transfer or attention.")
        String kind;

        @Parameters(index = "0", paramLabel = "DIR", description = "Where to write the project: a new or empty folder.")
        Path directory;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call()
        {
            PluginTemplate.Kind templateKind;
            try {
                templateKind = PluginTemplate.Kind.parse(kind);
                PluginTemplate.checkId(id);
            }
            catch (IllegalArgumentException e) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
            }
            PrintWriter out = spec.commandLine().getOut();
            var written = PluginTemplate.forCurrentEngine().write(id, templateKind, directory);
            out.println("wrote " + templateKind.label() + " plugin '" + id + "' to " + directory.toAbsolutePath().normalize() + ":");
            written.forEach(path -> out.println("  " + path));
            out.println("next: bin/handoff sdk install (once), then mvn verify in that folder; copy target/" + id
                    + "-0.1.0-SNAPSHOT.jar into the distribution's plugins/ and check bin/handoff plugins");
            out.flush();
            return Main.OK;
        }
    }
}
