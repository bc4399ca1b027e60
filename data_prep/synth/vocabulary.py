"""The generator's vocabulary: topics with their own words, people and places, fact values
and sentence templates, all written for this generator (data_prep/synth/text.py uses them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    name: str
    category: str  # the news category an article on it is filed under (MultiHop-RAG's six)
    nouns: tuple[str, ...]
    verbs: tuple[tuple[str, str], ...]  # (base, past)
    adjectives: tuple[str, ...]
    people: tuple[str, ...]
    places: tuple[str, ...]


def _t(name: str, category: str, nouns: str, verbs: str, adjs: str, people: str, places: str):
    """A topic from comma-separated nouns, people and places and space-separated words."""
    pairs = tuple(tuple(v.split("/")) for v in verbs.split())
    return Topic(
        name,
        category,
        tuple(nouns.split(",")),
        pairs,
        tuple(adjs.split()),
        tuple(people.split(",")),
        tuple(places.split(",")),
    )


TOPICS: tuple[Topic, ...] = (
    _t(
        "gardening",
        "science",
        (
            "basil,tomato bed,compost,trellis,seed tray,rain barrel,pruning shears,mulch,raised "
            "bed,greenhouse"
        ),
        "water/watered plant/planted prune/pruned repot/repotted weed/weeded",
        "leafy sunny damp sturdy overgrown fragrant",
        "Hilde Brandt,Omar Siddiq,Rosa Lind,Tobias Kern",
        "the allotment,the garden centre,Fernhill Nursery,the community plot",
    ),
    _t(
        "cooking",
        "entertainment",
        (
            "sourdough,cast iron pan,risotto,spice rack,stock pot,pasta dough,chili oil,cutting "
            "board,dumplings,oven"
        ),
        "bake/baked simmer/simmered season/seasoned knead/kneaded roast/roasted",
        "crispy savoury tender smoky rich tangy",
        "Chef Marta Ruiz,Ben Okafor,Lucia Ferri,Kenji Ota",
        "the farmers market,Ruiz Kitchen,the night market,the cooking school",
    ),
    _t(
        "cycling",
        "sports",
        (
            "gravel bike,chain,saddle,tubeless tyre,derailleur,cleats,bike computer,pannier,"
            "handlebar tape,helmet"
        ),
        "ride/rode tune/tuned climb/climbed patch/patched clean/cleaned",
        "light stiff muddy smooth steep windy",
        "Coach Ines Varga,Pavel Novak,Mia Sorensen,Dario Conti",
        "the river trail,Col de Brume,the velodrome,Spoke and Sprocket",
    ),
    _t(
        "photography",
        "technology",
        (
            "mirrorless camera,prime lens,tripod,light meter,film roll,darkroom,lens hood,raw "
            "file,flash,polariser"
        ),
        "shoot/shot frame/framed edit/edited develop/developed expose/exposed",
        "grainy sharp moody bright wide soft",
        "Yara Haddad,Felix Moreau,Ana Lucero,Sam Whitlock",
        "the harbour wall,Lumen Studio,the old quarry,the photo club",
    ),
    _t(
        "home repair",
        "business",
        (
            "leaky faucet,drywall,grout,circuit breaker,paint roller,hinge,floor tiles,caulk,"
            "ladder,water heater"
        ),
        "fix/fixed sand/sanded seal/sealed replace/replaced measure/measured",
        "cracked level damp glossy loose sturdy",
        "Rafael Duarte,Greta Holm,Ike Mensah,Nora Quist",
        "the hardware store,Beacon Supply,the basement,the workshop",
    ),
    _t(
        "travel",
        "entertainment",
        (
            "rail pass,carry-on,itinerary,hostel,ferry,guidebook,visa,boarding pass,day pack,"
            "phrasebook"
        ),
        "book/booked pack/packed visit/visited explore/explored cross/crossed",
        "crowded scenic cheap quiet remote sunny",
        "Lena Marsh,Tariq Aziz,Ode Bakker,Clara Vance",
        "Porto,the Alpine pass,Kyoto station,the old harbour",
    ),
    _t(
        "astronomy",
        "science",
        (
            "telescope,star chart,eyepiece,red torch,Saturn,meteor shower,equatorial mount,moon "
            "phase,nebula,finder scope"
        ),
        "observe/observed align/aligned track/tracked sketch/sketched log/logged",
        "faint clear dark cold bright distant",
        "Dr Ilse Park,Jonah Reyes,Priya Nair,Viktor Lang",
        "the dark-sky park,Hollow Ridge,the observatory,the rooftop",
    ),
    _t(
        "music",
        "entertainment",
        (
            "acoustic guitar,capo,metronome,chord chart,amp,fingerpicking pattern,setlist,tuning "
            "peg,pick,sheet music"
        ),
        "strum/strummed tune/tuned practise/practised record/recorded rehearse/rehearsed",
        "mellow loud bright warm tricky steady",
        "Mina Castell,Otis Grey,Rui Tavares,Elsa Brook",
        "the open mic,Bluebird Hall,the rehearsal room,the music shop",
    ),
    _t(
        "running",
        "sports",
        (
            "trail shoes,interval plan,heart rate monitor,foam roller,race bib,hydration vest,"
            "tempo run,long run,energy gel,running watch"
        ),
        "run/ran stretch/stretched train/trained pace/paced finish/finished",
        "hilly brisk tired steady humid flat",
        "Coach Ada Morrow,Luis Pena,Hana Ito,Ruth Ekberg",
        "the canal path,Millbrook park,the track,the half-marathon route",
    ),
    _t(
        "pottery",
        "entertainment",
        (
            "kiln,wheel,glaze,clay body,trimming tool,slip,bisque ware,mug handle,teapot,"
            "stoneware bowl"
        ),
        "throw/threw trim/trimmed glaze/glazed fire/fired wedge/wedged",
        "glossy lopsided earthy thin speckled sturdy",
        "Ines Calder,Bo Lindqvist,Amara Obi,Theo Walsh",
        "the clay studio,Kilnworks,the community centre,the craft fair",
    ),
    _t(
        "chess",
        "sports",
        (
            "opening repertoire,endgame,rook,knight,blitz game,chess clock,puzzle set,Sicilian "
            "line,pawn chain,tournament"
        ),
        "study/studied play/played analyse/analysed blunder/blundered sacrifice/sacrificed",
        "sharp quiet tactical solid rapid tense",
        "Grandmaster Lev Orlov,Sara Qureshi,Niko Baptiste,Edda Frost",
        "the chess club,Castle Cafe,the county open,the library annex",
    ),
    _t(
        "software project",
        "technology",
        (
            "database schema,login page,unit test,deployment script,API endpoint,cache,pull "
            "request,sprint board,error log,config file"
        ),
        "debug/debugged deploy/deployed refactor/refactored test/tested merge/merged",
        "slow stable flaky clean legacy fast",
        "Priya Shah,Marcus Bell,Jun Park,Olga Petrova",
        "the staging server,the team standup,the code review,the hackathon",
    ),
    _t(
        "sailing",
        "sports",
        (
            "dinghy,mainsail,jib,tiller,life jacket,mooring line,chart plotter,bilge pump,"
            "spinnaker,anchor"
        ),
        "sail/sailed tack/tacked moor/moored rig/rigged reef/reefed",
        "gusty calm salty choppy swift heavy",
        "Skipper Jan Vos,Lotte Berg,Aled Price,Ngozi Eze",
        "the marina,Gull Point,the yacht club,the estuary",
    ),
    _t(
        "knitting",
        "health",
        (
            "merino yarn,cable pattern,circular needles,stitch marker,cardigan,sock heel,swatch,"
            "wool blend,scarf,blocking mat"
        ),
        "knit/knitted cast/cast purl/purled block/blocked unravel/unravelled",
        "cosy chunky soft tight uneven warm",
        "Agnes Moor,Pilar Santos,Wen Li,Hugo Brandt",
        "the yarn shop,Woolly Corner,the knitting circle,the market hall",
    ),
    _t(
        "coffee",
        "business",
        (
            "pour-over,burr grinder,espresso machine,milk jug,single-origin beans,scale,kettle,"
            "cold brew,roast profile,filter paper"
        ),
        "grind/ground brew/brewed roast/roasted steam/steamed taste/tasted",
        "fruity bitter smooth strong bright nutty",
        "Dario Sousa,Helen Achebe,Kai Moon,Freya Dahl",
        "the roastery,Copperline Coffee,the cafe counter,the tasting room",
    ),
    _t(
        "health clinic",
        "health",
        (
            "blood test,physiotherapy plan,prescription,sleep diary,posture check,knee brace,"
            "vitamin D,step count,check-up,meal plan"
        ),
        "schedule/scheduled track/tracked review/reviewed adjust/adjusted follow/followed",
        "routine mild gradual healthy sore careful",
        "Dr Amal Hassan,Nurse Joy Adams,Dr Finn Roth,Mara Kelly",
        "the clinic,Riverside Health,the pharmacy,the physio room",
    ),
)

# Fact values: pools no filler template draws from (a value names exactly one planted fact).
VALUE_WORDS_A = (
    "amber cobalt crimson ivory jade copper silver scarlet olive indigo coral slate "
    "saffron teal pearl russet violet ochre cedar maple birch granite lilac rowan "
    "sable topaz umber walnut aspen bronze"
).split()
VALUE_WORDS_B = (
    "heron lantern otter compass falcon willow anchor thistle beacon harbor meadow quill "
    "badger juniper sparrow tide ember orchard pebble fox kestrel bramble cove lark "
    "marten osprey plover reed wren yarrow"
).split()
# A third word for when the pairs of one episode run short (a 2,556-query corpus needs ~4,000).
VALUE_WORDS_C = "Works,Labs,Group,Partners,Studio,Collective,Supply,Co-op,Trading,Guild".split(",")
HELPER_NAMES = (
    "Annika Voss,Bastian Kole,Cecily Marr,Dmitri Ansel,Esme Falk,Florin Dray,Gwen Ostrom,"
    "Henrik Sale,Isla Penn,Joaquin Rey,Kirsi Lund,Leopold Hart,Marisol Quay,Nils Arden,"
    "Oriana Fell,Perrin Lowe,Quinn Adair,Rhea Tamsin,Soren Hale,Talia Brisk"
).split(",")
FIRST_NAMES = (
    "Maya,Jon,Aiko,Felipe,Nadia,Oskar,Leila,Tomas,Grace,Idris,Sofia,Emil,Zara,Lukas,Noor,"
    "Caleb,Vera,Mateo,Ingrid,Ravi"
).split(",")
