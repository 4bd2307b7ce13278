package io.handoff.core.runtime;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.tokenizer.TokenizerJson;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * A model's own chat template, as its files carry it ({@code tokenizer_config.json}'s {@code chat_template}, or GGUF's
 * {@code tokenizer.chat_template}), with the BOS and EOS token texts the template refers to. The HTTP API renders it.
 */
public record ChatTemplateText(String template, String bosToken, String eosToken)
{
    private static final int MAX_CONFIG_BYTES = 16 * 1024 * 1024;

    public ChatTemplateText
    {
        requireNonNull(template, "template is null");
        requireNonNull(bosToken, "bosToken is null");
        requireNonNull(eosToken, "eosToken is null");
    }

    /**
     * From a Hugging Face directory's tokenizer_config.json: {@code chat_template} as a string, or as a list of named
     * templates (the one named "default"); empty when the file or the template is absent.
     */
    public static Optional<ChatTemplateText> fromHuggingFace(Path directory)
    {
        Path file = directory.resolve(TokenizerJson.CONFIG_FILE);
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        Map<String, Object> config = JsonFile.readObject(file, MAX_CONFIG_BYTES);
        Optional<String> template = switch (config.get("chat_template")) {
            case String text -> Optional.of(text);
            case List<?> named -> named.stream()
                    .filter(entry -> entry instanceof Map<?, ?> map && "default".equals(map.get("name")) && map.get("template") instanceof String)
                    .map(entry -> (String) ((Map<?, ?>) entry).get("template"))
                    .findFirst();
            case null, default -> Optional.empty();
        };
        return template.map(text -> new ChatTemplateText(text, tokenText(config.get("bos_token")), tokenText(config.get("eos_token"))));
    }

    /** A special token as tokenizer_config.json writes it: a string, or an object with its {@code content}. */
    private static String tokenText(Object token)
    {
        return switch (token) {
            case String text -> text;
            case Map<?, ?> map when map.get("content") instanceof String content -> content;
            case null, default -> "";
        };
    }
}
