package io.handoff.core.model.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Strings that exercise what byte-level BPE tokenizers disagree on: fixed cases chosen by hand, then
 * seeded combinations of fragments from many scripts, emoji sequences, code, white space, numbers,
 * contractions, punctuation, URLs and special-token strings, joined by assorted separators.
 */
final class TokenizerCorpus
{
    private static final List<String> FIXED = List.of(
            "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\u00a0", "\u3000", "a\u00a0b", "x\u3000y", "\ufeffBOM",
            "Hello, my dog is cute", "  leading", "trailing  ", "\ttab\tseparated\t", "line\r\nbreak\r\n\r\n",
            "I'm sure they'll've DONE it, WE'RE told; it's HE'S, 'RE 'LL 's 'Ll", "don't won't can't y'all O'Neil",
            "1,234.56 2024-12-01 0x1F 1e-9 -42 +3.5% 1000000 007 12345678901234",
            "١٢٣ ٤٥٦ ²³ ½ ⅔ ① 𝟙𝟚𝟛 ０１２",
            "Über Äpfel naïve façade résumé Øresund Łódź Ångström crème brûlée",
            "e\u0301 a\u0308 n\u0303 combining: Å vs A\u030a, ﬁ ligature, Ｆｕｌｌｗｉｄｔｈ",
            "Привет, мир! Ёжик в тумане.", "Γειά σου Κόσμε· ΑΒΓ αβγ", "مرحبا بالعالم، كيف حالك؟", "שלום עולם, מה שלומך?",
            "नमस्ते दुनिया। हिन्दी", "สวัสดีชาวโลก ภาษาไทย", "你好，世界！中文分词测试。", "こんにちは世界、カタカナとひらがな",
            "안녕하세요 세계 한국어", "東京タワー 北京 서울 Tōkyō",
            "🙂👍🏽👨‍👩‍👧‍👦 🏳️‍🌈 🇩🇪🇯🇵🇺🇸 ❤️ ✌🏿 🧑🏻‍💻 👩🏾‍🔬 1️⃣ #️⃣", "🚀🚀🚀", "a🙂b",
            "def main():\n    print(\"hi\")  # comment\n\n\n\treturn {'a': [1, 2]}\r\n",
            "const f = (x) => { return x ** 2; }; // arrow\nlet s = `t ${f(3)}`;",
            "{\"key\": \"value\", \"n\": [1, 2.5, null, true], \"nested\": {\"a\": {}}}",
            "<html><body class=\"x\"><p>Hello &amp; welcome</p><br/></body></html>",
            "https://example.com/path/to?query=1&b=%20x#frag mailto:a.b@c.de ftp://x.y/z",
            "!!! ??? ... --- *** ;;; ((())) [[[]]] {{{}}} <<< >>> ~~~ ``` ''' \"\"\"",
            "<|begin_of_text|>system<|eot_id|> text <|end_header_id|>", "Über 1,234 Äpfel — 東京 🚀 costs $5.99",
            "  leading spaces and\ttabs", "emoji 🙂👍🏽👨‍👩‍👧 flags 🇩🇪 and ❤️", "trailing spaces   \n\n   ", "numbers: ١٢٣ ²³ ½ 1000000 007",
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|><|endoftext|>",
            "<｜begin▁of▁sentence｜>Hello<｜User｜>hi<｜Assistant｜>", "<think>\nhm\n</think>\n\nanswer",
            "< |im_start| > <|im_start <|begin_of_text", "x".repeat(50) + " " + "ab".repeat(40),
            "    indented\n        deeper\n\t\tmixed \t \n", "end with newline\n", "\n\nstart with newlines",
            // where Java's and JavaScript's regular expressions may part: white space (U+0085, U+FEFF), case folding
            // in (?i:'s) (U+017F, U+212A), lone surrogates, and letters of recent Unicode versions
            "a \ufeff b", " \ufeff\n", "x\u0085\u0085y", "a \u0085 b", "it'\u017f 'S \u212a'll", "\u1680a\u180eb\u200bc",
            "lone \ud83d surrogate", "\ude00tail", "\u1c89\u1c8a new letters", "\ud803\udd50\ud803\udd51 Garay");

    private static final String[][] FRAGMENTS = {
            {"hello", "World", "the quick brown fox", "jumps over", "ÀÉÎÕÜ", "façade", "naïve", "Straße", "İstanbul", "ǅ"},
            {"Привет", "мир", "съешь же ещё", "Ελληνικά", "λόγος", "ΣΊΣΥΦΟΣ"},
            {"مرحبا", "السلام عليكم", "שלום", "עברית", "हिन्दी", "नमस्ते", "ภาษาไทย", "สวัสดี"},
            {"中文", "漢字", "日本語", "ひらがな", "カタカナ", "한국어", "안녕", "𠀀𠀁", "龘"},
            {"🙂", "👍🏽", "👨‍👩‍👧", "🏳️‍🌈", "🇩🇪", "🇯🇵", "❤️", "🧑🏻‍💻", "✌🏿", "1️⃣", "🫠"},
            {"def f(x):", "return x+1", "if (a && b) {", "}", "=>", "console.log(x);", "{\"a\": 1}", "[1, 2, 3]", "<div>", "</div>",
                    "&nbsp;", "import os", "x = y ** 2", "a != b", "// note", "/* c */", "#include <stdio.h>"},
            {" ", "  ", "   ", "\t", "\t\t", "\n", "\r\n", "\n\n\n", " \n", "\u00a0", "\u3000", "\u2003", "\u200b", "\u2028"},
            {"1,234.56", "2024-12-01", "0x1F", "1e-9", "42", "3.14159", "100%", "$5.99", "€10", "12345678", "٣", "²"},
            {"'s", "'ll", "'RE", "'ve", "'M", "'d", "'T", "n't", "’s", "I'm", "we'RE"},
            {"!!!", "...", "?!", "---", "***", "(", ")", "«»", "„“", "—", "–", "…", "·", "§", "¶", "©", "™", "\\", "|", "~"},
            {"https://example.com", "http://a.b/c?d=e&f=g", "www.test.org/x_y", "user@example.com"},
            {"<|begin_of_text|>", "<|eot_id|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<｜begin▁of▁sentence｜>",
                    "<｜end▁of▁sentence｜>", "<think>", "</think>", "<tool_call>", "<|start_header_id|>"}};
    private static final String[] SEPARATORS = {"", " ", "", " ", "  ", "\n", "\t", ", ", ". ", "\r\n", "\u00a0", "-", "_", "/"};

    private TokenizerCorpus() {}

    /** The fixed cases, then {@code generated} seeded combinations. */
    static List<String> strings(int generated, long seed)
    {
        List<String> corpus = new ArrayList<>(FIXED);
        SplittableRandom random = new SplittableRandom(seed);
        for (int n = 0; n < generated; n++) {
            StringBuilder s = new StringBuilder();
            int parts = 1 + random.nextInt(8);
            for (int p = 0; p < parts; p++) {
                String[] pool = FRAGMENTS[random.nextInt(FRAGMENTS.length)];
                s.append(pool[random.nextInt(pool.length)]);
                if (p + 1 < parts) {
                    s.append(SEPARATORS[random.nextInt(SEPARATORS.length)]);
                }
            }
            corpus.add(s.toString());
        }
        return corpus;
    }
}
