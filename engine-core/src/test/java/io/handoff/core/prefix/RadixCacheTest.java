package io.handoff.core.prefix;

import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.PageState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RadixCacheTest
{
    private final PagePool pool = new PagePool(16);
    private final RadixCache cache = new RadixCache(2, pool);

    @AfterEach
    void invariantsHold()
    {
        pool.checkInvariants();
        cache.checkInvariants();
    }

    @Test
    void onlyWholePagesAreCachedAndMatched()
    {
        int[] pages = pool.allocate(3).orElseThrow();
        PrefixInsert inserted = cache.insert(new int[] {1, 2, 3, 4, 5}, 5, pages);
        assertThat(inserted.prefix().length()).isEqualTo(4);
        assertThat(inserted.prefix().pages()).containsExactly(0, 1);
        assertThat(inserted.duplicates()).isEmpty();
        assertThat(cache.cachedPages()).isEqualTo(2);
        // the cache holds its own reference; the request still holds one
        assertThat(pool.refCount(0)).isEqualTo(2);
        assertThat(pool.refCount(2)).isEqualTo(1);

        assertThat(cache.match(new int[] {1, 2, 3, 4, 5, 6}).pages()).containsExactly(0, 1);
        assertThat(cache.match(new int[] {1, 2, 3, 9}).pages()).containsExactly(0);
        assertThat(cache.match(new int[] {1, 2, 3}).length()).isEqualTo(2);
        assertThat(cache.match(new int[] {1, 9}).length()).isZero();
        assertThat(cache.match(new int[] {1, 2, 3, 4}, 3).length()).isEqualTo(2);
        pool.release(pages);
        assertThat(pool.state(0)).isEqualTo(PageState.OWNED);
        assertThat(pool.state(2)).isEqualTo(PageState.FREE);
    }

    @Test
    void pagesOfAnAlreadyCachedPrefixComeBackAsDuplicates()
    {
        int[] first = pool.allocate(3).orElseThrow();
        cache.insert(new int[] {1, 2, 3, 4, 5, 6}, 6, first);
        int[] second = pool.allocate(3).orElseThrow();
        PrefixInsert inserted = cache.insert(new int[] {1, 2, 3, 4, 7, 8}, 6, second);

        assertThat(inserted.prefix().pages()).containsExactly(first[0], first[1], second[2]);
        assertThat(inserted.duplicates()).containsExactly(second[0], second[1]);
        assertThat(cache.cachedPages()).isEqualTo(4);
        assertThat(pool.refCount(second[0])).isEqualTo(1);
        pool.release(first);
        pool.release(second);
        assertThat(pool.accounting().owned()).isEqualTo(4);
    }

    @Test
    void reinsertingTheCachedPagesThemselvesIsNotADuplicate()
    {
        int[] pages = pool.allocate(2).orElseThrow();
        cache.insert(new int[] {1, 2, 3, 4}, 4, pages);
        PrefixInsert again = cache.insert(new int[] {1, 2, 3, 4}, 4, pages);
        assertThat(again.duplicates()).isEmpty();
        assertThat(pool.refCount(pages[0])).isEqualTo(2);
        pool.release(pages);
    }

    @Test
    void evictsLeastRecentlyUsedLeafFirst()
    {
        int[] a = insertAndRelease(new int[] {1, 1});
        int[] b = insertAndRelease(new int[] {2, 2});
        int[] c = insertAndRelease(new int[] {3, 3});
        cache.match(new int[] {1, 1});

        assertThat(cache.evict(1)).isEqualTo(1);
        assertThat(pool.state(b[0])).isEqualTo(PageState.FREE);
        assertThat(cache.evict(1)).isEqualTo(1);
        assertThat(pool.state(c[0])).isEqualTo(PageState.FREE);
        assertThat(pool.state(a[0])).isEqualTo(PageState.OWNED);
        assertThat(cache.match(new int[] {1, 1}).pages()).containsExactly(a);
    }

    @Test
    void evictionDropsChildrenBeforeTheirParentAndNeverTouchesLockedPrefixes()
    {
        insertAndRelease(new int[] {1, 1, 2, 2});
        insertAndRelease(new int[] {1, 1, 3, 3});
        int[] other = insertAndRelease(new int[] {4, 4});
        PrefixMatch locked = cache.match(new int[] {1, 1, 3, 3});
        cache.lock(locked.node());
        assertThat(cache.lockedPages()).isEqualTo(2);
        assertThat(cache.evictablePages()).isEqualTo(2);

        assertThat(cache.evict(100)).isEqualTo(2);
        assertThat(pool.state(other[0])).isEqualTo(PageState.FREE);
        assertThat(cache.cachedPages()).isEqualTo(2);
        assertThat(cache.match(new int[] {1, 1, 3, 3}).pages()).containsExactly(locked.pages());

        cache.unlock(locked.node());
        assertThat(cache.evictablePages()).isEqualTo(2);
        assertThat(cache.evict(1)).isEqualTo(1);
        assertThat(cache.match(new int[] {1, 1, 3, 3}).length()).isEqualTo(2);
        assertThat(cache.evict(1)).isEqualTo(1);
        assertThat(cache.cachedPages()).isZero();
        assertThat(pool.freePages()).isEqualTo(16);
    }

    @Test
    void matchInsideAnEdgeSplitsItSoOnlyTheMatchedPartIsLocked()
    {
        insertAndRelease(new int[] {1, 1, 2, 2, 3, 3});
        PrefixMatch match = cache.match(new int[] {1, 1, 2, 2, 9, 9});
        cache.lock(match.node());
        assertThat(cache.lockedPages()).isEqualTo(2);
        assertThat(cache.evict(10)).isEqualTo(1);
        assertThat(cache.cachedPages()).isEqualTo(2);
        cache.unlock(match.node());
    }

    @Test
    void evictUntilFreeStopsOnceEnoughPagesAreFree()
    {
        pool.allocate(10).orElseThrow();
        insertAndRelease(new int[] {1, 1, 2, 2});
        insertAndRelease(new int[] {3, 3, 4, 4});
        insertAndRelease(new int[] {5, 5});
        assertThat(pool.freePages()).isEqualTo(1);
        assertThat(cache.evictUntilFree(3)).isEqualTo(2);
        assertThat(pool.freePages()).isEqualTo(3);
        assertThat(cache.evictUntilFree(100)).isEqualTo(3);
        assertThat(cache.cachedPages()).isZero();
    }

    @Test
    void unbalancedUnlockAndForeignOrEvictedNodesAreRefused()
    {
        insertAndRelease(new int[] {1, 1});
        PrefixMatch match = cache.match(new int[] {1, 1});
        assertThatThrownBy(() -> cache.unlock(match.node()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("without a matching lock");
        assertThatThrownBy(() -> cache.lock(new ChunkCache(2).match(new int[] {1}).node())).isInstanceOf(IllegalArgumentException.class);
        RadixCache other = new RadixCache(2, pool);
        assertThatThrownBy(() -> other.lock(match.node())).isInstanceOf(IllegalArgumentException.class);
        cache.evict(1);
        assertThatThrownBy(() -> cache.lock(match.node())).isInstanceOf(IllegalStateException.class).hasMessageContaining("evicted");
    }

    @Test
    void insertOfPagesThePoolDoesNotOwnChangesNothing()
    {
        int[] pages = pool.allocate(1).orElseThrow();
        pool.release(pages);
        assertThatThrownBy(() -> cache.insert(new int[] {1, 1}, 2, pages)).isInstanceOf(IllegalStateException.class);
        assertThat(cache.cachedPages()).isZero();
        assertThat(cache.match(new int[] {1, 1}).length()).isZero();
    }

    private int[] insertAndRelease(int[] tokens)
    {
        int[] pages = pool.allocate(tokens.length / 2).orElseThrow();
        cache.insert(tokens, tokens.length, pages);
        pool.release(pages);
        return pages;
    }
}
