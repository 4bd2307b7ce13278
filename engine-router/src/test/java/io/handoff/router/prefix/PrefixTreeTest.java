package io.handoff.router.prefix;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PrefixTreeTest
{
    private static int[] key(String text)
    {
        return text.chars().toArray();
    }

    @Test
    void matchesTheLongestPrefixItHolds()
    {
        PrefixTree tree = new PrefixTree(1000);
        tree.insert(key("the cat sat"));
        assertThat(tree.match(key("the cat sat on the mat"))).isEqualTo(11);
        assertThat(tree.match(key("the cow"))).isEqualTo(5);
        assertThat(tree.match(key("a cat"))).isZero();
        assertThat(tree.match(key("the"))).isEqualTo(3);
        assertThat(tree.match(new int[0])).isZero();
    }

    @Test
    void keysThatShareAPrefixShareItsSymbols()
    {
        PrefixTree tree = new PrefixTree(1000);
        tree.insert(key("the cat sat"));
        tree.insert(key("the cow ran"));
        tree.insert(key("the cat sat")); // again: nothing new
        assertThat(tree.size()).isEqualTo("the c".length() + "at sat".length() + "ow ran".length());
        assertThat(tree.leafCount()).isEqualTo(2);
        assertThat(tree.match(key("the cow ran far"))).isEqualTo(11);
        assertThat(tree.match(key("the cat sat"))).isEqualTo(11);
        // a key that ends inside an edge, and one that extends a leaf
        tree.insert(key("the ca"));
        tree.insert(key("the cat sat down"));
        assertThat(tree.size()).isEqualTo("the c".length() + "at sat".length() + "ow ran".length() + " down".length());
        assertThat(tree.match(key("the cat sat down now"))).isEqualTo(16);
    }

    @Test
    void pastItsCapacityTheLeastRecentlyInsertedLeavesGo()
    {
        PrefixTree tree = new PrefixTree(30);
        tree.insert(key("aaaaaaaaaa")); // 10
        tree.insert(key("bbbbbbbbbb")); // 20
        tree.insert(key("cccccccccc")); // 30
        tree.insert(key("aaaaaaaaaa")); // used again: now b is the oldest
        tree.insert(key("dddddddddd")); // 40 > 30: b goes
        assertThat(tree.size()).isEqualTo(30);
        assertThat(tree.match(key("bbbbbbbbbb"))).isZero();
        assertThat(tree.match(key("aaaaaaaaaa"))).isEqualTo(10);
        assertThat(tree.match(key("cccccccccc"))).isEqualTo(10);
        assertThat(tree.match(key("dddddddddd"))).isEqualTo(10);
    }

    @Test
    void evictingALeafLeavesItsSharedPrefixForTheOthers()
    {
        PrefixTree tree = new PrefixTree(20);
        tree.insert(key("shared-one")); // 10
        tree.insert(key("shared-two")); // + 3 = 13
        tree.insert(key("xxxxxxxxx")); // 22 > 20: "one" goes (3), 19
        assertThat(tree.size()).isEqualTo(19);
        assertThat(tree.match(key("shared-one"))).isEqualTo(7);
        assertThat(tree.match(key("shared-two"))).isEqualTo(10);
    }

    @Test
    void aKeyLongerThanTheCapacityKeepsItsStart()
    {
        PrefixTree tree = new PrefixTree(8);
        tree.insert(key("abcdefghijkl"));
        assertThat(tree.size()).isEqualTo(8);
        assertThat(tree.match(key("abcdefghijkl"))).isEqualTo(8);
    }

    @Test
    void neverHoldsMoreThanItsCapacityUnderRandomKeys()
    {
        SplittableRandom random = new SplittableRandom(7);
        PrefixTree tree = new PrefixTree(500);
        for (int i = 0; i < 2000; i++) {
            int[] k = random.ints(random.nextInt(1, 60), 0, 3).toArray();
            tree.insert(k);
            assertThat(tree.size()).isLessThanOrEqualTo(500);
            assertThat(tree.match(k)).isEqualTo(k.length);
        }
    }

    @Test
    void refusesACapacityBelowOne()
    {
        assertThatThrownBy(() -> new PrefixTree(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1");
    }
}
