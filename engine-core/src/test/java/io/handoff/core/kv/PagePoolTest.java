package io.handoff.core.kv;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PagePoolTest
{
    private static final ReleaseProof DRAINED = new ReleaseProof.DrainAck(7, 1, 0);

    @Test
    void allocatesLowestFreePagesFirstWithANewGeneration()
    {
        PagePool pool = new PagePool(6);
        assertThat(pool.allocate(3)).hasValueSatisfying(pages -> assertThat(pages).containsExactly(0, 1, 2));
        pool.release(new int[] {1});
        assertThat(pool.allocate(2)).hasValueSatisfying(pages -> assertThat(pages).containsExactly(1, 3));
        assertThat(pool.generation(1)).isEqualTo(2);
        assertThat(pool.generation(3)).isEqualTo(1);
        assertThat(pool.generation(5)).isZero();
        pool.checkInvariants();
    }

    @Test
    void exhaustionReturnsEmptyAndChangesNothing()
    {
        PagePool pool = new PagePool(4);
        pool.allocate(3).orElseThrow();
        PageAccounting before = pool.accounting();
        assertThat(pool.allocate(2)).isEmpty();
        assertThat(pool.accounting()).isEqualTo(before);
        assertThat(pool.allocate(1)).hasValueSatisfying(pages -> assertThat(pages).containsExactly(3));
        assertThat(pool.allocate(1)).isEmpty();
        assertThat(pool.allocate(0)).hasValueSatisfying(pages -> assertThat(pages).isEmpty());
        pool.checkInvariants();
    }

    @Test
    void sharedPageReturnsToFreeListOnlyWhenLastOwnerReleases()
    {
        PagePool pool = new PagePool(2);
        int[] pages = pool.allocate(1).orElseThrow();
        pool.retain(pages);
        assertThat(pool.refCount(0)).isEqualTo(2);
        assertThat(pool.release(pages)).isZero();
        assertThat(pool.state(0)).isEqualTo(PageState.OWNED);
        assertThat(pool.release(pages)).isEqualTo(1);
        assertThat(pool.state(0)).isEqualTo(PageState.FREE);
        pool.checkInvariants();
    }

    @Test
    void quarantinedPageIsNeverReallocatedUntilReleasedWithProof()
    {
        PagePool pool = new PagePool(3);
        int[] pages = pool.allocate(2).orElseThrow();
        pool.markReceiving(pages);
        // the request is aborted mid-transfer: its pages may still be written
        pool.quarantine(pages);
        assertThat(pool.accounting()).isEqualTo(new PageAccounting(3, 1, 0, 0, 2));
        assertThat(pool.allocate(1)).hasValueSatisfying(next -> assertThat(next).containsExactly(2));
        assertThat(pool.allocate(1)).isEmpty();

        pool.releaseQuarantined(pages, DRAINED);
        assertThat(pool.allocate(2)).hasValueSatisfying(next -> assertThat(next).containsExactly(0, 1));
        assertThat(pool.generation(0)).isEqualTo(2);
        pool.checkInvariants();
    }

    @Test
    void receivingPageCannotBeReleasedOnlyQuarantinedOrCommitted()
    {
        PagePool pool = new PagePool(2);
        int[] pages = pool.allocate(1).orElseThrow();
        pool.markReceiving(pages);
        assertThatThrownBy(() -> pool.release(pages))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("page 0")
                .hasMessageContaining("RECEIVING")
                .hasMessageContaining("quarantine");
        assertThatThrownBy(() -> pool.retain(pages)).isInstanceOf(IllegalStateException.class);
        pool.commitReceived(pages);
        assertThat(pool.state(0)).isEqualTo(PageState.OWNED);
        assertThat(pool.release(pages)).isEqualTo(1);
        pool.checkInvariants();
    }

    @Test
    void sharedPageCannotBecomeATransferDestinationOrBeQuarantined()
    {
        PagePool pool = new PagePool(2);
        int[] pages = pool.allocate(1).orElseThrow();
        pool.retain(pages);
        assertThatThrownBy(() -> pool.markReceiving(pages)).isInstanceOf(IllegalStateException.class).hasMessageContaining("one owner");
        assertThatThrownBy(() -> pool.quarantine(pages)).isInstanceOf(IllegalStateException.class).hasMessageContaining("other owners");
        assertThat(pool.state(0)).isEqualTo(PageState.OWNED);
        pool.checkInvariants();
    }

    @Test
    void refusedBatchLeavesEveryPageUnchanged()
    {
        PagePool pool = new PagePool(4);
        pool.allocate(2).orElseThrow();
        PageAccounting before = pool.accounting();
        // page 0 and 1 are releasable, page 3 is free: nothing may change
        assertThatThrownBy(() -> pool.release(new int[] {0, 1, 3}))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("page 3")
                .hasMessageContaining("double release");
        assertThatThrownBy(() -> pool.release(new int[] {0, 0})).hasMessageContaining("twice");
        assertThatThrownBy(() -> pool.release(new int[] {9})).isInstanceOf(IllegalArgumentException.class);
        assertThat(pool.accounting()).isEqualTo(before);
        assertThat(pool.refCount(0)).isEqualTo(1);
        assertThat(pool.refCount(1)).isEqualTo(1);
        pool.checkInvariants();
    }

    @Test
    void quarantinedPageCannotBeFreedByAnOrdinaryRelease()
    {
        PagePool pool = new PagePool(1);
        int[] pages = pool.allocate(1).orElseThrow();
        pool.quarantine(pages);
        assertThatThrownBy(() -> pool.release(pages)).isInstanceOf(IllegalStateException.class).hasMessageContaining("proof");
        assertThatThrownBy(() -> pool.releaseQuarantined(pages, null)).isInstanceOf(NullPointerException.class);
        assertThat(pool.state(0)).isEqualTo(PageState.QUARANTINED);
        pool.releaseQuarantined(pages, new ReleaseProof.PeerFenced("decode-0", "registration revoked"));
        assertThat(pool.state(0)).isEqualTo(PageState.FREE);
        assertThatThrownBy(() -> pool.releaseQuarantined(pages, DRAINED)).hasMessageContaining("not quarantined");
        pool.checkInvariants();
    }
}
