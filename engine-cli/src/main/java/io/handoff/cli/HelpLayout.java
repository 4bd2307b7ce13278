package io.handoff.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.UsageMessageSpec;

import java.util.Map;

/**
 * How help reads, for every command: a command list of one-line summaries (a command's first sentence), and
 * {@code -Dkey=value} written as it is typed rather than as picocli writes an option with a value.
 */
final class HelpLayout
{
    private static final int SUMMARY_WIDTH = 66;

    private HelpLayout() {}

    static void apply(CommandLine commandLine)
    {
        Map<String, CommandLine.IHelpSectionRenderer> sections = commandLine.getHelpSectionMap();
        sections.put(UsageMessageSpec.SECTION_KEY_COMMAND_LIST, HelpLayout::commandList);
        CommandLine.IHelpSectionRenderer synopsis = sections.get(UsageMessageSpec.SECTION_KEY_SYNOPSIS);
        sections.put(UsageMessageSpec.SECTION_KEY_SYNOPSIS, help -> synopsis.render(help).replace("[-D=KEY=VALUE]", "[-Dkey=value]"));
        CommandLine.IHelpSectionRenderer options = sections.get(UsageMessageSpec.SECTION_KEY_OPTION_LIST);
        // the same width, so the descriptions stay aligned
        sections.put(UsageMessageSpec.SECTION_KEY_OPTION_LIST, help -> options.render(help).replace("-D=KEY=VALUE", "-Dkey=value "));
        commandLine.getSubcommands().values().forEach(HelpLayout::apply);
    }

    private static String commandList(CommandLine.Help help)
    {
        Map<String, CommandLine.Help> commands = help.subcommands();
        if (commands.isEmpty()) {
            return "";
        }
        int width = commands.keySet().stream().mapToInt(String::length).max().orElse(0) + 2;
        StringBuilder list = new StringBuilder();
        commands.forEach((name, command) -> {
            String[] description = command.commandSpec().usageMessage().description();
            String summary = summary(description.length == 0 ? "" : description[0]);
            list.append("  ").append(name).append(" ".repeat(width - name.length())).append(summary).append(System.lineSeparator());
        });
        return list.toString();
    }

    /** The first sentence (or clause, when the sentence is long), within the width of one line. */
    static String summary(String description)
    {
        String text = description.replace("%n", " ").strip();
        int end = text.indexOf(". ");
        String sentence = end < 0 ? text : text.substring(0, end);
        if (sentence.length() > SUMMARY_WIDTH) {
            int cut = firstOf(sentence, ": ", "; ", " (", ", ");
            sentence = cut > 0 ? sentence.substring(0, cut) : sentence;
        }
        if (sentence.length() > SUMMARY_WIDTH) {
            sentence = sentence.substring(0, sentence.lastIndexOf(' ', SUMMARY_WIDTH - 1)) + " ...";
        }
        return sentence.endsWith(".") && !sentence.endsWith("...") ? sentence.substring(0, sentence.length() - 1) : sentence;
    }

    private static int firstOf(String text, String... marks)
    {
        int first = -1;
        for (String mark : marks) {
            int at = text.indexOf(mark);
            if (at > 0 && (first < 0 || at < first)) {
                first = at;
            }
        }
        return first;
    }
}
