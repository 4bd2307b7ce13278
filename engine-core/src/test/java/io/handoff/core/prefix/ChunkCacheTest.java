package io.handoff.core.prefix;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChunkCacheTest
{
    private final ChunkCache cache = new ChunkCache(4);

    @Test
    void newRequestNeverMatchesEvenAfterAnotherInsertedTheSameTokens()
    {
        int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
        cache.insert(tokens, 8, new int[] {3, 4});
        PrefixMatch match = cache.match(tokens);
        assertThat(match.length()).isZero();
        assertThat(match.pages()).isEmpty();
        cache.lock(match.node());
        cache.unlock(match.node());
        assertThat(cache.cachedPages()).isZero();
    }

    @Test
    void requestsOwnFinishedChunksBecomeItsPrefix()
    {
        int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        int[] pages = {6, 2, 9};
        PrefixInsert afterFirstChunk = cache.insert(tokens, 6, pages);
        assertThat(afterFirstChunk.prefix().length()).isEqualTo(4);
        assertThat(afterFirstChunk.prefix().pages()).containsExactly(6);
        assertThat(afterFirstChunk.duplicates()).isEmpty();
        PrefixInsert afterSecondChunk = cache.insert(tokens, 10, pages);
        assertThat(afterSecondChunk.prefix().pages()).containsExactly(6, 2);
    }

    @Test
    void holdsNothingToEvict()
    {
        assertThat(cache.evict(5)).isZero();
        assertThat(cache.evictUntilFree(5)).isZero();
        assertThat(cache.evictablePages()).isZero();
        assertThatThrownBy(() -> cache.insert(new int[] {1, 2, 3, 4}, 4, new int[0])).isInstanceOf(IllegalArgumentException.class);
    }
}
