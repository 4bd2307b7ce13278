package io.handoff.core.output;

import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.GrammarExpr;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.grammar.TriggeredText;
import io.handoff.core.json.Json;
import io.handoff.core.json.JsonText;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How one model family writes tool calls, which its chat template teaches it: the text that starts the calls, the
 * grammar of a call (so that a required call, or a strict tool's, is held to it) and the parser that finds calls in
 * the output. The family is read off the chat template; a template that does not render tools gets {@link #GENERIC}:
 * the tools are described in a system message and calls are written as {@link #HERMES} writes them. Every front end
 * that takes tools uses this one place.
 */
public enum ToolFormat
{
    /** Qwen 2.5 / 3, Hermes: {@code <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>}, one block per call. */
    HERMES("<tool_call>", "arguments", "\n"),
    /** Llama 3.1+: {@code {"name": ..., "parameters": {...}}}, calls separated by {@code "; "}. */
    LLAMA3("{\"name\": \"", "parameters", "; "),
    /**
     * Mistral: {@code [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]}, where {@code [TOOL_CALLS]} is a special
     * token: a constrained call starts with that token when the tokenizer has it, and the parser takes the list with or
     * without it (a skipped special token leaves no text).
     */
    MISTRAL("[{\"name\": \"", "arguments", ", "),
    /** DeepSeek V3: {@code <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>...}. */
    DEEPSEEK_V3("<｜tool▁calls▁begin｜>", "arguments", ""),
    /** A template without tools: described in a system message, written as HERMES writes them. */
    GENERIC("<tool_call>", "arguments", "\n");

    private static final String DS_CALL = "<｜tool▁call▁begin｜>";
    private static final String DS_SEP = "<｜tool▁sep｜>";
    private static final String DS_CALL_END = "<｜tool▁call▁end｜>";
    private static final String DS_END = "<｜tool▁calls▁end｜>";
    private static final Pattern HERMES_BLOCK = Pattern.compile("<tool_call>\\s*(.*?)\\s*</tool_call>", Pattern.DOTALL);
    private static final Pattern DS_BLOCK = Pattern.compile(Pattern.quote(DS_CALL) + "function" + Pattern.quote(DS_SEP) + "(.*?)\\n```json\\n(.*?)\\n```"
            + Pattern.quote(DS_CALL_END), Pattern.DOTALL);

    private final String trigger;
    private final String argumentsKey;
    private final String separator;

    ToolFormat(String trigger, String argumentsKey, String separator)
    {
        this.trigger = trigger;
        this.argumentsKey = argumentsKey;
        this.separator = separator;
    }

    /** One call found in the output; {@code arguments} is compact JSON text. */
    public record Call(String name, String arguments) {}

    /** The output split into its text (empty when there is none) and its calls. */
    public record Parsed(Optional<String> content, List<Call> calls) {}

    /** The family a chat template's source writes tool calls in. */
    public static ToolFormat of(String templateSource)
    {
        if (templateSource.contains("<tool_call>")) {
            return HERMES;
        }
        if (templateSource.contains("[TOOL_CALLS]")) {
            return MISTRAL;
        }
        if (templateSource.contains("tool▁calls▁begin")) {
            return DEEPSEEK_V3;
        }
        if (templateSource.contains("tools") && (templateSource.contains("<|python_tag|>") || templateSource.contains("\"parameters\""))) {
            return LLAMA3;
        }
        return GENERIC;
    }

    /** Whether the model's template renders {@code tools} itself. */
    public boolean templateRendersTools()
    {
        return this != GENERIC;
    }

    /** The text that starts the calls in the output. */
    public String trigger()
    {
        return trigger;
    }

    /** The special token that starts the calls, when the family has one ({@code [TOOL_CALLS]} for Mistral). */
    public Optional<String> specialStart()
    {
        return this == MISTRAL ? Optional.of("[TOOL_CALLS]") : Optional.empty();
    }

    /** For {@link #GENERIC}: the system message that describes the tools (each as its JSON text) and how to call them. */
    public String systemPrompt(List<String> toolsJson)
    {
        StringBuilder text = new StringBuilder("You can call these functions (JSON Schema of each one's arguments):\n");
        for (String tool : toolsJson) {
            text.append(tool).append('\n');
        }
        text.append("To call a function, answer with <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call> and nothing else");
        return text.toString();
    }

    /** For {@link #GENERIC}: an earlier call as the assistant wrote it. */
    public String written(Call call)
    {
        return "<tool_call>\n{\"name\": \"" + call.name() + "\", \"arguments\": " + call.arguments() + "}\n</tool_call>";
    }

    /**
     * The grammar the output follows when it may call {@code callable}: calls only when a call is {@code required};
     * free text that turns into calls at the trigger when a tool is strict; none otherwise (the parser still finds
     * calls). One call, or with {@code parallel} one or more. Throws
     * {@link io.handoff.core.grammar.GrammarException} when a tool's schema cannot be enforced.
     */
    public Optional<Grammar> grammar(List<ToolSpec> callable, boolean required, boolean parallel)
    {
        return grammar(callable, required, parallel, java.util.OptionalInt.empty());
    }

    /** Like {@link #grammar(List, boolean, boolean)}, with the id of the family's {@link #specialStart} token in the tokenizer. */
    public Optional<Grammar> grammar(List<ToolSpec> callable, boolean required, boolean parallel, java.util.OptionalInt specialStart)
    {
        boolean strict = callable.stream().anyMatch(ToolSpec::strict);
        if (callable.isEmpty() || !required && !strict) {
            return Optional.empty();
        }
        JsonSchemaGrammar schemas = new JsonSchemaGrammar(null);
        List<GrammarExpr> whole = new ArrayList<>();
        List<GrammarExpr> afterTrigger = new ArrayList<>();
        String lead = switch (this) {
            case MISTRAL -> trigger.substring(1);
            case DEEPSEEK_V3 -> "";
            default -> trigger;
        };
        for (ToolSpec tool : callable) {
            GrammarExpr arguments = schemas.document(tool.parameters(), "parameters");
            String prefix = callPrefix(tool.name());
            whole.add(GrammarExpr.seq(GrammarExpr.literal(prefix), arguments, GrammarExpr.literal(callSuffix())));
            afterTrigger.add(GrammarExpr.seq(GrammarExpr.literal(prefix.substring(lead.length())), arguments, GrammarExpr.literal(callSuffix())));
        }
        GrammarExpr one = GrammarExpr.alt(whole);
        GrammarExpr more = parallel
                ? new GrammarExpr.Repeat(GrammarExpr.seq(GrammarExpr.literal(separator), one), 0, GrammarExpr.Repeat.UNBOUNDED)
                : GrammarExpr.EMPTY;
        String open = switch (this) {
            case MISTRAL -> "[";
            case DEEPSEEK_V3 -> trigger;
            default -> "";
        };
        String close = switch (this) {
            case MISTRAL -> "]";
            case DEEPSEEK_V3 -> DS_END;
            default -> "";
        };
        GrammarExpr marker = specialStart.isPresent() && this == MISTRAL ? new GrammarExpr.Special(specialStart.getAsInt()) : GrammarExpr.EMPTY;
        String source = "tools " + name() + " " + required + " " + parallel + " " + specialStart + " " + callable.stream()
                .map(t -> t.name() + (t.strict() ? "!" : "") + JsonText.write(t.parameters())).toList();
        if (required) {
            return Optional.of(schemas.grammar(GrammarExpr.seq(marker, GrammarExpr.literal(open), one, more, GrammarExpr.literal(close)), source));
        }
        // strict under auto: free text until the trigger, then the calls (the trigger is their start)
        Optional<GrammarExpr> markedStart = marker == GrammarExpr.EMPTY ? Optional.empty()
                : Optional.of(GrammarExpr.seq(marker, GrammarExpr.literal(open), one, more, GrammarExpr.literal(close)));
        schemas.addRules(TriggeredText.rules("text", trigger, GrammarExpr.seq(GrammarExpr.alt(afterTrigger), more, GrammarExpr.literal(close)),
                markedStart));
        return Optional.of(schemas.grammar(new GrammarExpr.Ref("text-0"), source));
    }

    // A call's text before its arguments, and after them.
    private String callPrefix(String name)
    {
        String quoted = JsonText.write(name);
        return switch (this) {
            case HERMES, GENERIC -> "<tool_call>\n{\"name\": " + quoted + ", \"arguments\": ";
            case LLAMA3 -> "{\"name\": " + quoted + ", \"parameters\": ";
            case MISTRAL -> "{\"name\": " + quoted + ", \"arguments\": ";
            case DEEPSEEK_V3 -> DS_CALL + "function" + DS_SEP + name + "\n```json\n";
        };
    }

    private String callSuffix()
    {
        return switch (this) {
            case HERMES, GENERIC -> "}\n</tool_call>";
            case LLAMA3, MISTRAL -> "}";
            case DEEPSEEK_V3 -> "\n```" + DS_CALL_END;
        };
    }

    /** Finds the calls in {@code text}; text that does not parse as calls stays content. */
    public Parsed parse(String text)
    {
        int at = switch (this) {
            case MISTRAL -> {
                int marker = text.indexOf("[TOOL_CALLS]");
                yield marker >= 0 ? marker : text.indexOf(trigger);
            }
            default -> text.indexOf(trigger);
        };
        if (at < 0) {
            return new Parsed(Optional.of(text), List.of());
        }
        String before = text.substring(0, at).stripTrailing();
        String rest = text.substring(at);
        List<Call> calls = new ArrayList<>();
        try {
            switch (this) {
                case HERMES, GENERIC -> {
                    Matcher m = HERMES_BLOCK.matcher(rest);
                    while (m.find()) {
                        calls.add(call(json(m.group(1))));
                    }
                }
                case LLAMA3 -> {
                    for (String part : rest.split("; (?=\\{)")) {
                        calls.add(call(json(part.strip())));
                    }
                }
                case MISTRAL -> {
                    String list = rest.startsWith("[TOOL_CALLS]") ? rest.substring("[TOOL_CALLS]".length()) : rest;
                    if (!(json(list.strip()) instanceof List<?> items)) {
                        throw new CallShapeException();
                    }
                    for (Object item : items) {
                        calls.add(call(item));
                    }
                }
                case DEEPSEEK_V3 -> {
                    Matcher m = DS_BLOCK.matcher(rest);
                    while (m.find()) {
                        if (!(json(m.group(2)) instanceof Map<?, ?> arguments)) {
                            throw new CallShapeException();
                        }
                        calls.add(new Call(m.group(1), JsonText.write(arguments)));
                    }
                }
            }
        }
        catch (IllegalArgumentException | CallShapeException e) {
            return new Parsed(Optional.of(text), List.of());
        }
        if (calls.isEmpty()) {
            return new Parsed(Optional.of(text), List.of());
        }
        return new Parsed(before.isBlank() ? Optional.empty() : Optional.of(before), calls);
    }

    private static Object json(String text)
    {
        return Json.parse(text, "a tool call");
    }

    private Call call(Object node)
    {
        if (!(node instanceof Map<?, ?> map) || !(map.get("name") instanceof String name) || !(map.get(argumentsKey) instanceof Map<?, ?> arguments)) {
            throw new CallShapeException();
        }
        return new Call(name, JsonText.write(arguments));
    }

    private static final class CallShapeException
            extends RuntimeException
    {
        CallShapeException()
        {
            super(null, null, false, false);
        }
    }
}
