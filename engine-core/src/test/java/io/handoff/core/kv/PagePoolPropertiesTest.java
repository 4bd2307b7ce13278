package io.handoff.core.kv;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Random operation sequences against a plain per-page reference model: the pool must agree with the
 * model on every page's state, refcount and generation after every step, and refuse exactly the
 * operations the model says are illegal, without changing anything.
 */
class PagePoolPropertiesTest
{
    enum Kind
    {
        ALLOCATE, RETAIN, RELEASE, MARK_RECEIVING, COMMIT, QUARANTINE, RELEASE_QUARANTINED
    }

    record Op(Kind kind, long seed) {}

    @Provide
    Arbitrary<List<Op>> operations()
    {
        return Combinators.combine(Arbitraries.of(Kind.class), Arbitraries.longs()).as(Op::new).list().ofMaxSize(60);
    }

    @Property(tries = 400, seed = "1729")
    void poolAgreesWithReferenceModelAfterEveryOperation(@ForAll @IntRange(min = 1, max = 12) int total, @ForAll("operations") List<Op> ops)
    {
        PagePool pool = new PagePool(total);
        Model model = new Model(total);
        for (Op op : ops) {
            apply(pool, model, op);
            pool.checkInvariants();
            model.assertMatches(pool);
        }
    }

    private static void apply(PagePool pool, Model model, Op op)
    {
        Random random = new Random(op.seed());
        switch (op.kind()) {
            case ALLOCATE -> {
                int count = random.nextInt(model.total / 2 + 2);
                Optional<int[]> pages = pool.allocate(count);
                int[] expected = model.lowest(PageState.FREE, count);
                if (expected == null) {
                    assertThat(pages).as("allocate %d with %d free", count, model.count(PageState.FREE)).isEmpty();
                    return;
                }
                assertThat(pages).hasValueSatisfying(actual -> assertThat(actual).containsExactly(expected));
                for (int page : expected) {
                    long previous = model.generation[page];
                    model.state[page] = PageState.OWNED;
                    model.refCount[page] = 1;
                    model.generation[page]++;
                    assertThat(pool.generation(page)).isGreaterThan(previous);
                }
            }
            case RETAIN -> batch(pool::retain, model, pick(model, random, PageState.OWNED),
                    page -> model.state[page] == PageState.OWNED, page -> model.refCount[page]++);
            case RELEASE -> batch(pool::release, model, pick(model, random, PageState.OWNED),
                    page -> model.state[page] == PageState.OWNED, page -> {
                        if (--model.refCount[page] == 0) {
                            model.state[page] = PageState.FREE;
                        }
                    });
            case MARK_RECEIVING -> batch(pool::markReceiving, model, pick(model, random, PageState.OWNED),
                    page -> model.state[page] == PageState.OWNED && model.refCount[page] == 1, page -> model.state[page] = PageState.RECEIVING);
            case COMMIT -> batch(pool::commitReceived, model, pick(model, random, PageState.RECEIVING),
                    page -> model.state[page] == PageState.RECEIVING, page -> model.state[page] = PageState.OWNED);
            case QUARANTINE -> batch(pool::quarantine, model, pick(model, random, random.nextBoolean() ? PageState.RECEIVING : PageState.OWNED),
                    page -> model.state[page] == PageState.RECEIVING || (model.state[page] == PageState.OWNED && model.refCount[page] == 1),
                    page -> {
                        model.state[page] = PageState.QUARANTINED;
                        model.refCount[page] = 0;
                    });
            case RELEASE_QUARANTINED -> {
                ReleaseProof proof = switch (random.nextInt(3)) {
                    case 0 -> new ReleaseProof.DrainAck(random.nextInt(100), random.nextInt(5), random.nextInt(4));
                    case 1 -> new ReleaseProof.ReceiverValidated(random.nextInt(100), random.nextInt(5));
                    default -> new ReleaseProof.PeerFenced("peer", "connection closed");
                };
                batch(pages -> pool.releaseQuarantined(pages, proof), model, pick(model, random, PageState.QUARANTINED),
                        page -> model.state[page] == PageState.QUARANTINED, page -> model.state[page] = PageState.FREE);
            }
        }
    }

    private interface PoolCall
    {
        void call(int[] pages);
    }

    private interface PageUpdate
    {
        void apply(int page);
    }

    // runs a batch operation; it must succeed iff every page is legal and none repeats, and a refusal changes nothing
    private static void batch(PoolCall call, Model model, int[] pages, IntPredicate legal, PageUpdate update)
    {
        boolean distinct = Arrays.stream(pages).distinct().count() == pages.length;
        if (distinct && Arrays.stream(pages).allMatch(legal)) {
            call.call(pages);
            for (int page : pages) {
                update.apply(page);
            }
        }
        else {
            assertThatThrownBy(() -> call.call(pages)).isInstanceOf(IllegalStateException.class);
        }
    }

    // mostly pages in the wanted state, sometimes any page or a repeat, so refusals get exercised too
    private static int[] pick(Model model, Random random, PageState wanted)
    {
        List<Integer> candidates = new ArrayList<>();
        for (int page = 0; page < model.total; page++) {
            if (model.state[page] == wanted) {
                candidates.add(page);
            }
        }
        Set<Integer> picked = new LinkedHashSet<>();
        int count = 1 + random.nextInt(3);
        for (int i = 0; i < count; i++) {
            if (candidates.isEmpty() || random.nextInt(8) == 0) {
                picked.add(random.nextInt(model.total));
            }
            else {
                picked.add(candidates.get(random.nextInt(candidates.size())));
            }
        }
        int[] pages = picked.stream().mapToInt(Integer::intValue).toArray();
        if (random.nextInt(20) == 0) {
            pages = Arrays.copyOf(pages, pages.length + 1);
            pages[pages.length - 1] = pages[0];
        }
        return pages;
    }

    private static final class Model
    {
        final int total;
        final PageState[] state;
        final int[] refCount;
        final long[] generation;

        Model(int total)
        {
            this.total = total;
            this.state = new PageState[total];
            this.refCount = new int[total];
            this.generation = new long[total];
            Arrays.fill(state, PageState.FREE);
        }

        int count(PageState wanted)
        {
            return (int) Arrays.stream(state).filter(s -> s == wanted).count();
        }

        int[] lowest(PageState wanted, int count)
        {
            int[] pages = new int[count];
            int found = 0;
            for (int page = 0; page < total && found < count; page++) {
                if (state[page] == wanted) {
                    pages[found++] = page;
                }
            }
            return found == count ? pages : null;
        }

        void assertMatches(PagePool pool)
        {
            for (int page = 0; page < total; page++) {
                assertThat(pool.state(page)).as("state of page %d", page).isEqualTo(state[page]);
                assertThat(pool.refCount(page)).as("refcount of page %d", page).isEqualTo(refCount[page]);
                assertThat(pool.generation(page)).as("generation of page %d", page).isEqualTo(generation[page]);
            }
            assertThat(pool.accounting()).isEqualTo(new PageAccounting(total, count(PageState.FREE), count(PageState.OWNED),
                    count(PageState.RECEIVING), count(PageState.QUARANTINED)));
        }
    }
}
