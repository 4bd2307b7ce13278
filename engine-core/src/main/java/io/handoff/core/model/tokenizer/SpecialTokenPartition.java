package io.handoff.core.model.tokenizer;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * Text cut at the special tokens written in it, the way llama.cpp does before any tokenizer runs: token by token,
 * longest text first (equal lengths by id), every occurrence in every piece of text not yet cut. Where two tokens
 * overlap this can differ from a left-to-right scan: in "abcd" with tokens "ab" and "bcd", "bcd" is matched.
 */
final class SpecialTokenPartition
{
    /** A part of the text: plain text, or a special token's id. */
    sealed interface Fragment
            permits Text, Token {}

    record Text(String text) implements Fragment {}

    record Token(int id) implements Fragment {}

    /** A token matched verbatim in the text. */
    record Special(int id, String content)
    {
        Special
        {
            requireNonNull(content, "content is null");
            if (content.isEmpty()) {
                throw new IllegalArgumentException("special token " + id + " is empty");
            }
        }
    }

    private final List<Special> longestFirst;

    SpecialTokenPartition(List<Special> specials)
    {
        this.longestFirst = specials.stream()
                .sorted(Comparator.comparingInt((Special s) -> s.content().length()).reversed().thenComparingInt(Special::id))
                .toList();
    }

    List<Fragment> split(String text)
    {
        List<Fragment> fragments = new ArrayList<>();
        if (!text.isEmpty()) {
            fragments.add(new Text(text));
        }
        for (Special special : longestFirst) {
            List<Fragment> cut = null;
            for (int f = 0; f < fragments.size(); f++) {
                if (!(fragments.get(f) instanceof Text(String plain)) || !plain.contains(special.content())) {
                    if (cut != null) {
                        cut.add(fragments.get(f));
                    }
                    continue;
                }
                if (cut == null) {
                    cut = new ArrayList<>(fragments.subList(0, f));
                }
                int from = 0;
                for (int at = plain.indexOf(special.content()); at >= 0; at = plain.indexOf(special.content(), from)) {
                    if (at > from) {
                        cut.add(new Text(plain.substring(from, at)));
                    }
                    cut.add(new Token(special.id()));
                    from = at + special.content().length();
                }
                if (from < plain.length()) {
                    cut.add(new Text(plain.substring(from)));
                }
            }
            if (cut != null) {
                fragments = cut;
            }
        }
        return fragments;
    }
}
