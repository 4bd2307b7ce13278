package io.handoff.demo;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static java.util.Objects.requireNonNull;

/**
 * The demo's requests, in the shape of GSM8K 8-shot: one long few-shot prefix shared by every request
 * (eight short worked question/answer examples written for this project), then a question of its own.
 * The shared prefix is what makes the prefix cache, and with it the early send of cached-prefix KV, fire
 * on the prefill; the distinct suffixes make every request's output its own.
 *
 * @param sharedPrefix the few-shot examples every prompt starts with
 * @param questions one question per request, all different, generated from a seed
 */
public record Workload(String sharedPrefix, List<String> questions)
{
    private static final String PREFIX = """
            Question: Mara bakes 3 trays of rolls with 12 rolls on each tray. She sells 20 rolls. How many rolls are left?
            Answer: She bakes 3 * 12 = 36 rolls. After selling 20 she has 36 - 20 = 16. The answer is 16.

            Question: A bus has 15 riders. 18 get on and 7 get off. How many riders are on the bus?
            Answer: 15 + 18 = 33 and 33 - 7 = 26 riders. The answer is 26.

            Question: Theo reads 25 pages a day. His book has 230 pages and he has read for 6 days. How many pages remain?
            Answer: He has read 25 * 6 = 150 pages, so 230 - 150 = 80 pages remain. The answer is 80.

            Question: A garden has 7 rows of 9 tulips. Rabbits eat 11 tulips. How many tulips are still standing?
            Answer: There were 7 * 9 = 63 tulips and 63 - 11 = 52 are left. The answer is 52.

            Question: Ines buys 4 pens at $3 each and pays with $20. How much change does she get?
            Answer: She spends 4 * 3 = 12 dollars, so her change is 20 - 12 = 8. The answer is 8.

            Question: A train travels 60 km each hour for 3 hours, then 45 km in its last hour. How far does it go?
            Answer: It covers 60 * 3 = 180 km, then 45 km more: 180 + 45 = 225 km. The answer is 225.

            Question: Five friends share 85 marbles equally and each gives 4 to a cousin. How many does each keep?
            Answer: Each gets 85 / 5 = 17 marbles and keeps 17 - 4 = 13. The answer is 13.

            Question: A shelf holds 8 boxes of 24 screws. A builder uses 50 screws. How many screws are left?
            Answer: The shelf has 8 * 24 = 192 screws and 192 - 50 = 142 remain. The answer is 142.

            """;

    private static final String[] NAMES = {"Ada", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun",
            "Kira", "Luis", "Mele", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tove"};
    private static final String[] ITEMS = {"apples", "stamps", "pencils", "shells", "cards", "beads", "coins", "stickers",
            "marbles", "buttons", "tickets", "cookies"};
    private static final String[] CONTAINERS = {"boxes", "bags", "jars", "crates", "baskets", "packs"};

    private static final String WARM_UP = "A clock strikes once at one, twice at two and so on. How many strikes from one to four?";

    public Workload
    {
        requireNonNull(sharedPrefix, "sharedPrefix is null");
        questions = List.copyOf(requireNonNull(questions, "questions is null"));
    }

    /** {@code requests} distinct questions after the shared 8-shot prefix; the same seed gives the same workload. */
    public static Workload fewShot(int requests, long seed)
    {
        if (requests < 1) {
            throw new IllegalArgumentException("requests must be at least 1, got " + requests);
        }
        SplittableRandom random = new SplittableRandom(seed);
        // The templates span far more than any sensible request count; a repeat is drawn again.
        Set<String> questions = new LinkedHashSet<>();
        while (questions.size() < requests) {
            questions.add(question(random));
        }
        return new Workload(PREFIX, new ArrayList<>(questions));
    }

    private static String question(SplittableRandom random)
    {
        String name = NAMES[random.nextInt(NAMES.length)];
        String item = ITEMS[random.nextInt(ITEMS.length)];
        int a = random.nextInt(2, 13);
        int b = random.nextInt(2, 30);
        int c = random.nextInt(1, a * b);
        return switch (random.nextInt(4)) {
            case 0 -> "%s has %d %s with %d %s in each and gives away %d %s. How many %s are left?"
                    .formatted(name, a, CONTAINERS[random.nextInt(CONTAINERS.length)], b, item, c, item, item);
            case 1 -> "%s collects %d %s a day for %d days, then loses %d. How many %s does %s have?"
                    .formatted(name, b, item, a, c, item, name);
            case 2 -> "%s shares %d %s equally among %d friends and then finds %d more. How many does each friend get?"
                    .formatted(name, a * b, item, a, c);
            default -> "%s buys %d %s at $%d each and pays with $%d. How much change does %s get?"
                    .formatted(name, a, item, b, a * b + c, name);
        };
    }

    public int size()
    {
        return questions.size();
    }

    /** The full prompt of request {@code index}: the shared prefix, then its question, then the answer cue. */
    public String prompt(int index)
    {
        return sharedPrefix + "Question: " + questions.get(index) + "\nAnswer:";
    }

    /**
     * A prompt with the shared prefix and a question no request asks: sent once before the measured
     * requests so the prefix is in the cache, as it is in steady state (that is when early send fires).
     */
    public String warmUpPrompt()
    {
        return sharedPrefix + "Question: " + WARM_UP + "\nAnswer:";
    }

    public List<String> prompts()
    {
        List<String> prompts = new ArrayList<>(questions.size());
        for (int i = 0; i < questions.size(); i++) {
            prompts.add(prompt(i));
        }
        return prompts;
    }
}
