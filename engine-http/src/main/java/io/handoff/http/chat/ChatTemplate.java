package io.handoff.http.chat;

import io.handoff.core.output.ToolFormat;
import java.time.Clock;
import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * A Hugging Face chat template ({@code tokenizer_config.json}'s {@code chat_template}) with the tokens
 * it refers to, rendered as transformers' {@code apply_chat_template(messages, tokenize=False)} does:
 * Jinja with {@code trim_blocks} and {@code lstrip_blocks}, the variables {@code messages},
 * {@code add_generation_prompt}, {@code bos_token} and {@code eos_token}, the functions
 * {@code raise_exception(message)} and {@code strftime_now(format)}, and {@code namespace()} and
 * {@code range()}; {@code tools} and {@code documents} are undefined. The renderer is a Jinja subset of
 * this package's own (see {@link TemplateParser} for what it covers); a template outside it fails in
 * {@link #parse}, naming the construct, rather than rendering differently.
 *
 * @param bosToken the tokenizer's BOS token text ({@code ""} when it has none)
 * @param eosToken the tokenizer's EOS token text ({@code ""} when it has none)
 */
public final class ChatTemplate
{
    private final String source;
    private final List<TemplateAst.Node> nodes;
    private final String bosToken;
    private final String eosToken;
    private final Clock clock;

    private ChatTemplate(String source, List<TemplateAst.Node> nodes, String bosToken, String eosToken, Clock clock)
    {
        this.source = source;
        this.nodes = nodes;
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.clock = clock;
    }

    /** Parses {@code source}; throws {@link ChatTemplateException} naming the line and construct it cannot handle. */
    public static ChatTemplate parse(String source, String bosToken, String eosToken)
    {
        return parse(source, bosToken, eosToken, Clock.systemDefaultZone());
    }

    /** Like {@link #parse(String, String, String)}, with the clock {@code strftime_now} reads. */
    public static ChatTemplate parse(String source, String bosToken, String eosToken, Clock clock)
    {
        requireNonNull(source, "source is null");
        return new ChatTemplate(source, TemplateParser.parse(source), requireNonNull(bosToken, "bosToken is null"),
                requireNonNull(eosToken, "eosToken is null"), requireNonNull(clock, "clock is null"));
    }

    /** The template's text (which tells, for one, how the model writes tool calls). */
    public String source()
    {
        return source;
    }

    public String bosToken()
    {
        return bosToken;
    }

    public String eosToken()
    {
        return eosToken;
    }

    /**
     * The prompt text for {@code messages}; throws {@link ChatTemplateException} when the template refuses
     * them ({@link ChatTemplateException#raised()}) or fails on them.
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt)
    {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /** Like {@link #render(List, boolean)}, with extra template variables (e.g. {@code enable_thinking}). */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, Object> extra)
    {
        List<Object> turns = new ArrayList<>();
        for (ChatMessage message : messages) {
            Map<String, Object> turn = new LinkedHashMap<>();
            turn.put("role", message.role());
            turn.put("content", message.content());
            if (!message.toolCalls().isEmpty()) {
                List<Object> calls = new ArrayList<>();
                for (int i = 0; i < message.toolCalls().size(); i++) {
                    ToolFormat.Call call = message.toolCalls().get(i);
                    Map<String, Object> function = new LinkedHashMap<>();
                    function.put("name", call.name());
                    function.put("arguments", TemplateValues.fromJson(ToolCallJson.arguments(call)));
                    Map<String, Object> entry = new LinkedHashMap<>();
                    entry.put("id", message.toolCallIds().get(i));
                    entry.put("type", "function");
                    entry.put("function", function);
                    calls.add(entry);
                }
                turn.put("tool_calls", calls);
            }
            message.toolCallId().ifPresent(id -> turn.put("tool_call_id", id));
            message.name().ifPresent(name -> turn.put("name", name));
            turns.add(turn);
        }
        Map<String, Object> globals = new HashMap<>(extra);
        globals.put("messages", turns);
        globals.put("add_generation_prompt", addGenerationPrompt);
        globals.put("bos_token", bosToken);
        globals.put("eos_token", eosToken);
        globals.put("raise_exception", (TemplateFunctions.Callable) (args, kwargs) -> {
            throw new ChatTemplateException(args.isEmpty() ? "the chat template refused the conversation" : TemplateValues.str(args.getFirst()), true);
        });
        globals.put("strftime_now", (TemplateFunctions.Callable) (args, kwargs) -> strftime(TemplateValues.str(args.isEmpty() ? "" : args.getFirst()),
                ZonedDateTime.now(clock)));
        globals.put("namespace", (TemplateFunctions.Callable) (args, kwargs) -> new TemplateValues.Namespace(new HashMap<>(kwargs)));
        globals.put("range", (TemplateFunctions.Callable) ChatTemplate::range);
        return new TemplateRenderer(globals, new TemplateFunctions()).render(nodes);
    }

    private static Object range(List<Object> args, Map<String, Object> kwargs)
    {
        long start = args.size() > 1 ? (Long) args.get(0) : 0;
        long stop = (Long) args.get(args.size() > 1 ? 1 : 0);
        long step = args.size() > 2 ? (Long) args.get(2) : 1;
        if (step == 0 || Math.abs((stop - start) / step) > 100_000) {
            throw new ChatTemplateException("chat template: range(" + start + ", " + stop + ", " + step + ") is refused (zero step or over 100000 items)");
        }
        List<Object> values = new ArrayList<>();
        for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
            values.add(i);
        }
        return values;
    }

    /** Python's {@code strftime} for the directives chat templates use (dates, times, names in English). */
    static String strftime(String format, ZonedDateTime time)
    {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                out.append(c);
                continue;
            }
            char d = format.charAt(++i);
            out.append(switch (d) {
                case 'd' -> two(time.getDayOfMonth());
                case 'm' -> two(time.getMonthValue());
                case 'Y' -> String.valueOf(time.getYear());
                case 'y' -> two(time.getYear() % 100);
                case 'H' -> two(time.getHour());
                case 'I' -> two(time.getHour() % 12 == 0 ? 12 : time.getHour() % 12);
                case 'M' -> two(time.getMinute());
                case 'S' -> two(time.getSecond());
                case 'p' -> time.getHour() < 12 ? "AM" : "PM";
                case 'B' -> time.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
                case 'b' -> time.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
                case 'A' -> time.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
                case 'a' -> time.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
                case 'j' -> String.format("%03d", time.getDayOfYear());
                case '%' -> "%";
                default -> "%" + d;
            });
        }
        return out.toString();
    }

    private static String two(int value)
    {
        return value < 10 ? "0" + value : String.valueOf(value);
    }
}
