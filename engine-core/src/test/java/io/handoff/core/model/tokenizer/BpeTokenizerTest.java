package io.handoff.core.model.tokenizer;

import io.handoff.core.json.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.handoff.core.model.tokenizer.TinyTokenizerJson.BOS;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.EO;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.EOS;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.E_ACUTE_FIRST;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.E_ACUTE_SECOND;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.HEL;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.HELLO;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.SPACE;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.SPACE_THE;
import static io.handoff.core.model.tokenizer.TinyTokenizerJson.SPACE_WORLD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BpeTokenizerTest
{
    @SuppressWarnings("unchecked")
    private static BpeTokenizer parse(String json, Map<String, Object> config, Map<String, Object> generation)
    {
        return TokenizerJson.parse((Map<String, Object>) Json.parse(json, "test tokenizer.json"), config, generation, "test tokenizer.json");
    }

    private static BpeTokenizer tiny()
    {
        return parse(TinyTokenizerJson.json(TinyTokenizerJson.bosTemplate(), false), Map.of(), Map.of());
    }

    @Test
    void mergesByRankWithinEachPreTokenizedWord()
    {
        assertThat(tiny().encode("hello the world", false)).containsExactly(HELLO, SPACE_THE, SPACE_WORLD);
        assertThat(tiny().encode("hellohello", false)).containsExactly(HELLO, HELLO);
        assertThat(tiny().encode("  the", false)).as("a space run before a word keeps its last space for the word")
                .containsExactly(SPACE, SPACE_THE);
    }

    @Test
    void ignoreMergesTakesAWholeWordFromTheVocabulary()
    {
        assertThat(tiny().encode("hel", false)).containsExactly(11, 2);
        assertThat(parse(TinyTokenizerJson.json("null", true), Map.of(), Map.of()).encode("hel", false)).containsExactly(HEL);
    }

    @Test
    void aSpecialTokenIsFoundByHowItIsWrittenAndNothingElseIs()
    {
        assertThat(tiny().specialTokenId("<|eos|>")).hasValue(EOS);
        assertThat(tiny().specialTokenId("<|eo")).as("an added token that is not special").isEmpty();
        assertThat(tiny().specialTokenId("hello")).isEmpty();
        assertThat(tiny().specialTokenId("<|eos|><|eos|>")).isEmpty();
    }

    @Test
    void addedTokensAreMatchedLongestFirstBeforePreTokenization()
    {
        assertThat(tiny().encode("hello<|eos|>the<|eo", false)).containsExactly(HELLO, EOS, 7, 11, EO);
        assertThat(tiny().decode(new int[] {HELLO, EOS, SPACE_THE, EO})).as("specials have no text; an added token has its own")
                .isEqualTo("hello the<|eo");
    }

    @Test
    void templateProcessingPrependsBosOnlyWhenSpecialTokensAreAdded()
    {
        assertThat(tiny().encodePrompt("hello")).containsExactly(BOS, HELLO);
        assertThat(tiny().encode("hello", false)).containsExactly(HELLO);
        assertThat(tiny().bosTokenId()).isEmpty().as("no bos_token named without tokenizer_config.json");
    }

    @Test
    void tokenizerConfigAddBosTokenAppliesWithoutATemplateAndGenerationConfigNamesTheEosIds()
    {
        String json = TinyTokenizerJson.json("null", false);
        BpeTokenizer withBos = parse(json, Map.of("add_bos_token", true, "bos_token", "<|bos|>", "eos_token", Map.of("content", "<|eos|>")),
                Map.of());
        assertThat(withBos.encodePrompt("hello")).containsExactly(BOS, HELLO);
        assertThat(withBos.bosTokenId()).hasValue(BOS);
        assertThat(withBos.eosTokenIds()).containsExactly(EOS);
        // Saying nothing of add_bos_token, the files add no BOS (a checkpoint's prompt rule may: ModelSource's PromptBos).
        BpeTokenizer unsaid = parse(json, Map.of("bos_token", "<|bos|>"), Map.of("eos_token_id", List.of(23L, 26L)));
        assertThat(unsaid.encodePrompt("hello")).containsExactly(HELLO);
        assertThat(new PromptBos(unsaid, BOS).encodePrompt("hello")).containsExactly(BOS, HELLO);
        assertThat(new PromptBos(unsaid, BOS).encode("hello", true)).containsExactly(HELLO);
        assertThat(unsaid.eosTokenIds()).containsExactlyInAnyOrder(EOS, 26);
        BpeTokenizer without = parse(json, Map.of("add_bos_token", false, "bos_token", "<|bos|>"), Map.of());
        assertThat(without.encodePrompt("hello")).containsExactly(HELLO);
    }

    @Test
    void streamingDecoderHoldsAPartialCharacterUntilItsLastByte()
    {
        BpeTokenizer tokenizer = tiny();
        assertThat(tokenizer.encode("hello é", false)).containsExactly(HELLO, SPACE, E_ACUTE_FIRST, E_ACUTE_SECOND);
        StreamingDecoder stream = tokenizer.streamingDecoder();
        assertThat(stream.next(HELLO)).isEqualTo("hello");
        assertThat(stream.next(SPACE)).isEqualTo(" ");
        assertThat(stream.next(E_ACUTE_FIRST)).isEmpty();
        assertThat(stream.next(E_ACUTE_SECOND)).isEqualTo("é");
        assertThat(stream.next(E_ACUTE_FIRST)).isEmpty();
        assertThat(stream.finish()).as("a character cut off at the end").isEqualTo("\uFFFD");
        assertThat(tokenizer.decode(new int[] {HELLO, E_ACUTE_FIRST})).isEqualTo("hello\uFFFD");
    }

    @Test
    void readsTheTokenizerFilesOfAModelDirectory(@TempDir Path dir)
            throws IOException
    {
        Files.writeString(dir.resolve(TokenizerJson.FILE), TinyTokenizerJson.json(TinyTokenizerJson.bosTemplate(), false));
        Files.writeString(dir.resolve(TokenizerJson.CONFIG_FILE), "{\"bos_token\": \"<|bos|>\", \"eos_token\": \"<|eos|>\"}");
        Files.writeString(dir.resolve(TokenizerJson.GENERATION_CONFIG_FILE), "{\"eos_token_id\": 26}");
        BpeTokenizer tokenizer = TokenizerJson.read(dir);
        assertThat(tokenizer.encodePrompt("hello the world")).containsExactly(BOS, HELLO, SPACE_THE, SPACE_WORLD);
        assertThat(tokenizer.eosTokenIds()).containsExactly(26);
        assertThat(tokenizer.vocabSize()).isEqualTo(27);
    }

    @Test
    void refusesWhatItDoesNotImplementNamingTheFileAndTheSupportedKinds(@TempDir Path dir)
    {
        String json = TinyTokenizerJson.json("null", false);
        assertThatThrownBy(() -> parse(json.replace("\"type\": \"ByteLevel\", \"add_prefix_space\": false", "\"type\": \"Metaspace\", \"x\": 1"),
                Map.of(), Map.of()))
                .hasMessageContaining("test tokenizer.json").hasMessageContaining("Metaspace").hasMessageContaining("supported: ByteLevel");
        assertThatThrownBy(() -> parse(json.replace("\"type\": \"BPE\"", "\"type\": \"Unigram\""), Map.of(), Map.of()))
                .hasMessageContaining("model type Unigram is not supported; supported: BPE");
        assertThatThrownBy(() -> TokenizerJson.read(dir)).hasMessageContaining(dir.toString()).hasMessageContaining("tokenizer.json");
        assertThatThrownBy(() -> parse(json.replace("\"normalizer\": null", "\"normalizer\": {\"type\": \"Lowercase\"}"), Map.of(), Map.of()))
                .hasMessageContaining("normalizer Lowercase is not supported; supported: none (null), NFC, NFD, NFKC, NFKD");
        assertThatThrownBy(() -> parse(json.replace("\"content\": \"<|eo\", ", "\"content\": \"<|eo\", \"lstrip\": true, "), Map.of(), Map.of()))
                .hasMessageContaining("added token <|eo sets lstrip, which is not supported");
    }

    @Test
    void anNfcNormalizerComposesTheTextBeforeItIsSplitButNotTheAddedTokens()
    {
        String json = TinyTokenizerJson.json("null", false);
        BpeTokenizer nfc = parse(json.replace("\"normalizer\": null",
                "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}]}"), Map.of(), Map.of());
        assertThat(nfc.encode("e\u0301<|eos|>", false)).containsExactly(E_ACUTE_FIRST, E_ACUTE_SECOND, EOS);
        assertThatThrownBy(() -> parse(json, Map.of(), Map.of()).encode("e\u0301", false))
                .hasMessageContaining("the vocabulary has no token for");
    }

    @Test
    void ggufListsGiveTheSameIdsAsTheTokenizerJson()
    {
        BpeTokenizer json = tiny();
        List<String> tokens = new java.util.ArrayList<>();
        List<Integer> types = new java.util.ArrayList<>();
        for (int id = 0; id < json.vocabSize(); id++) {
            String token = id == BOS ? "<|bos|>" : id == EOS ? "<|eos|>" : id == EO ? "<|eo" : null;
            if (token == null) {
                token = tokenOf(json, id);
            }
            tokens.add(token);
            types.add(id == BOS || id == EOS ? 3 : id == EO ? 4 : 1);
        }
        List<String> merges = List.of("h e", "l l", "he ll", "hell o", "\u0120 t", "\u0120t he", "\u0120 w", "o r", "\u0120w or", "l d",
                "\u0120wor ld");
        BpeTokenizer gguf = BpeTokenizer.of(tokens, merges, types, BOS, EOS, true, "gpt2");
        for (String text : List.of("hello the world", "hello<|eos|>the<|eo", "hello é")) {
            assertThat(gguf.encodePrompt(text)).as(text).containsExactly(json.encodePrompt(text));
        }
        assertThat(gguf.eosTokenIds()).containsExactly(EOS);
        assertThatThrownBy(() -> BpeTokenizer.of(tokens, merges, types, BOS, EOS, true, "jais"))
                .hasMessageContaining("pre-tokenizer 'jais' is not supported; supported: llama-bpe, default, gpt2, qwen2, tekken, gpt-4o, smollm, deepseek-v3");
    }

    private static String tokenOf(BpeTokenizer tokenizer, int id)
    {
        for (String candidate : List.of("h", "e", "l", "o", "w", "r", "d", "t", "\u0120", "\u00c3", "\u00a9", "he", "ll", "hell", "hello",
                "\u0120t", "\u0120the", "\u0120w", "or", "\u0120wor", "ld", "\u0120world", "hel", "!")) {
            if (tokenizer.id(candidate).orElse(-1) == id) {
                return candidate;
            }
        }
        throw new AssertionError("no token for id " + id);
    }
}
