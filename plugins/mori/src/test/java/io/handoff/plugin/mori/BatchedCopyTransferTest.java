package io.handoff.plugin.mori;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.Link;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

import static io.handoff.testkit.transfer.Plans.firstPages;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole contract with batches of a few pages ({@code max-copy-bytes} of 4KiB: four pages of the test pool's
 * largest stride), so runs are copied in several batches; and what a batch must keep: each page is reported once, in
 * order, only once it is in every region, and a fault at a page inside what would be a batch still sees exactly the
 * pages up to it written.
 */
class BatchedCopyTransferTest
        extends SharedMemoryTransferTest
{
    @Override
    protected Map<String, String> settings()
    {
        return Map.of("max-copy-bytes", "4KiB");
    }

    @Test
    void aBatchedCopyReportsEachPageOnceInOrderAfterItLandedInEveryRegion()
            throws Exception
    {
        try (Link link = open()) {
            TransferPlan plan = plan(ROOM, 1, 5, ProducerFence.DONE, new int[] {0, 8, 11}, new int[] {20, 40, 7});
            List<Map.Entry<Integer, Integer>> pages = List.copyOf(pagesOf(plan).entrySet());
            List<Integer> reported = new CopyOnWriteArrayList<>();
            List<Boolean> landed = new CopyOnWriteArrayList<>();
            List<Integer> landedSoFar = new CopyOnWriteArrayList<>();
            // No page is watched: the backend batches as it likes; the action looks at memory at every report.
            link.hooks().onAfterPage(page -> false, (room, page) -> {
                reported.add(page);
                Map.Entry<Integer, Integer> dstToSrc = pages.get(page - plan.firstPageIndex());
                landed.add(link.destination().holds(dstToSrc.getKey(), dstToSrc.getValue()));
                landedSoFar.add((int) pages.stream().filter(entry -> link.destination().holds(entry.getKey(), entry.getValue())).count());
            });

            assertThat(link.post(plan).await().completed()).isTrue();

            assertThat(reported).containsExactlyElementsOf(IntStream.range(5, 5 + plan.pages()).boxed().toList());
            assertThat(landed).hasSize(plan.pages()).containsOnly(true);
            // Batches of four pages within each run (11 = 4 + 4 + 3, 7 = 4 + 3): a batch's pages are reported after all of it landed.
            assertThat(landedSoFar).containsExactly(4, 4, 4, 4, 8, 8, 8, 8, 11, 11, 11, 15, 15, 15, 15, 18, 18, 18);
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
        }
    }

    @Test
    void aFaultAtAPageInsideABatchStopsAfterExactlyThatPage()
            throws Exception
    {
        try (Link link = open()) {
            // Page 5 is the second page of the second batch of four: the batch ends there.
            link.hooks().onAfterPage(page -> page == 5, (room, page) -> {
                if (page == 5) {
                    throw new IllegalStateException("injected fault after page 5");
                }
            });
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 30, 11});

            String reason = link.post(plan).await().failure();

            assertThat(reason).contains("injected fault after page 5").contains("6 of 11 pages");
            assertThat(link.destination().mismatches(firstPages(plan, 6))).isEmpty();
            // Pages 0..5 were reported, once each; nothing after the fault was.
            assertThat(link.events().stream().filter(event -> event.startsWith("after ")))
                    .containsExactlyElementsOf(IntStream.range(0, 6).mapToObj(page -> "after " + ROOM + " page " + page).toList());
        }
    }
}
