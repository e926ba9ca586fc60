"""A small corpus the tests write themselves: five unrelated topics, a few hundred words each."""

HONEYBEES = """Honeybees live in colonies of tens of thousands of workers, a few hundred drones and a single queen.
The workers are sterile females that clean the hive, feed the larvae, build wax comb and guard the entrance.
Older workers become foragers that fly up to several kilometres from the hive to collect nectar and pollen.

When a forager finds a rich patch of flowers she returns to the hive and performs the waggle dance on the
vertical surface of the comb. The angle of the waggle run relative to vertical tells her sisters the direction
of the flowers relative to the sun, and the duration of the waggle run encodes the distance to the food source.
Karl von Frisch decoded this dance language and received the Nobel Prize in Physiology or Medicine in 1973.
Recruits that follow the dance also smell the scent of the flowers on the dancer's body.

Nectar is carried home in the honey stomach and passed from bee to bee. Enzymes such as invertase break the
sucrose into glucose and fructose, and the workers fan their wings to evaporate water until the honey holds
less than twenty percent moisture. The cells are then capped with wax. A strong colony can store more than
fifty kilograms of honey in a good season, which it needs to survive the winter as a tight cluster that
shivers its flight muscles to keep the queen warm.

Pollination by honeybees is worth billions of dollars to agriculture every year. Almond orchards in
California depend almost entirely on hives that beekeepers move there by truck each spring. Colony losses
from the varroa mite, pesticides and poor nutrition have worried farmers and scientists for two decades.
"""

VOLCANOES = """A volcano is an opening in the crust of a planet through which molten rock, ash and gases escape.
Most volcanoes on Earth sit along the boundaries of tectonic plates. At subduction zones an oceanic plate
sinks beneath another plate, water released from the sinking slab lowers the melting point of the mantle,
and the resulting magma rises to feed chains of steep stratovolcanoes such as those of the Andes and Japan.

Shield volcanoes form instead from very fluid basaltic lava that flows a long way before it cools. Mauna Loa
in Hawaii is the largest active volcano on Earth by volume; it grew over a hot spot, a plume of hot mantle
that stays nearly fixed while the Pacific plate moves over it. The chain of Hawaiian islands records that
motion, with the oldest islands in the northwest and the youngest, still active, in the southeast.

The explosiveness of an eruption depends mainly on the viscosity and gas content of the magma. Sticky,
silica-rich magma traps gas until the pressure shatters it into ash and pumice, producing towering Plinian
columns and deadly pyroclastic flows that race down the slopes at hundreds of kilometres per hour. The
eruption of Mount Vesuvius in the year 79 buried the Roman towns of Pompeii and Herculaneum under such flows.

Volcanologists watch for swarms of small earthquakes, swelling of the ground measured by satellite radar,
and changes in the sulfur dioxide given off at the summit. These signals do not give an exact date, but
they allowed the evacuation of thousands of people before the 1991 eruption of Mount Pinatubo.
"""

SOURDOUGH = """Sourdough bread is leavened by a starter, a culture of wild yeasts and lactic acid bacteria kept
alive in a mixture of flour and water. The baker feeds the starter with fresh flour and water every day or
two. The yeasts produce carbon dioxide that raises the dough, while the bacteria produce lactic and acetic
acids that give the bread its sour taste and help it keep for longer than bread made with baker's yeast.

A typical loaf starts with a levain built from a spoonful of starter the night before. The next morning the
baker mixes flour and water and lets them rest for an autolyse of about an hour, then adds the levain and
salt. During bulk fermentation the dough is folded every half hour to build the gluten network. The loaf is
then shaped, placed in a floured basket and proofed slowly in the refrigerator overnight.

Baking happens in a very hot oven, often inside a covered cast iron pot that traps steam during the first
twenty minutes. The steam keeps the crust soft long enough for the loaf to expand, a rise bakers call oven
spring, and a deep cut made with a razor blade, the score, controls where the crust opens. After the lid is
removed the crust browns through the Maillard reaction and caramelisation.

San Francisco is famous for its sourdough, and one of its bacteria was named Lactobacillus sanfranciscensis
after the city, although the same species has since been found in starters all over the world.
"""

CHESS = """Chess is a board game for two players who move sixteen pieces each on a board of sixty-four squares.
The aim is to checkmate the opposing king, attacking it so that it has no legal move to escape. The modern
rules took shape in southern Europe near the end of the fifteenth century, when the queen and the bishop
gained their long-range moves and the game became much faster than its Persian ancestor shatranj.

Every game has an opening, a middlegame and an endgame. Opening theory catalogues thousands of named lines
such as the Sicilian Defence, the Ruy Lopez and the Queen's Gambit. In the middlegame players plan attacks,
look for tactics such as forks, pins and skewers, and weigh long-term advantages like pawn structure and
piece activity. In the endgame the king becomes a strong piece and precise calculation decides the result.

Computers changed chess profoundly. In 1997 the IBM machine Deep Blue defeated the world champion Garry
Kasparov in a six-game match in New York. Twenty years later the neural network program AlphaZero taught
itself the game by playing against itself and beat the strongest conventional engine of the time. Today
every professional prepares with engines, and online platforms host millions of games a day.

The Elo rating system, devised by the physicist Arpad Elo, estimates the strength of players from their
results. A grandmaster title requires a rating of at least 2500 and norms earned in international events.
"""

LIGHTHOUSES = """Lighthouses mark dangerous coasts, reefs and harbour entrances so that ships can navigate at night.
The Pharos of Alexandria, built in the third century before the common era, was one of the Seven Wonders of
the Ancient World and stood for more than a thousand years before earthquakes brought it down.

For centuries lighthouses burned wood, coal or oil, and much of the light was lost. In 1822 the French
physicist Augustin Fresnel invented a lens made of concentric rings of glass prisms that bends the light
into a narrow horizontal beam. A first-order Fresnel lens could be seen more than twenty nautical miles out
to sea, and the design spread to lighthouses all over the world within a few decades.

Each light has its own characteristic, a pattern of flashes and eclipses printed on nautical charts, so
that sailors can tell which lighthouse they are looking at. Keepers lived at the station with their families,
wound the clockwork that turned the lens, trimmed the wicks and kept the glass free of soot.

Automation ended that way of life. Electric lamps, timers and later solar panels made keepers unnecessary,
and the last keepers in many countries left their towers in the 1980s and 1990s. Satellite navigation has
made many lights redundant, but coast guards still maintain them as a backup when electronics fail.
"""

DOCUMENTS = {
    "honeybees.txt": HONEYBEES,
    "volcanoes.md": VOLCANOES,
    "food/sourdough.txt": SOURDOUGH,
    "games/chess.txt": CHESS,
    "lighthouses.txt": LIGHTHOUSES,
}
