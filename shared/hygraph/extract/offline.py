"""The offline extractor: rule-based entities, relations, facts and units (no model, no network).

It is the embedded default: pure Python and stdlib ``re``, deterministic and fast.
Its rules were tuned by measuring the entity keys it finds against the entities
an LLM (gpt-3.5-turbo, HippoRAG's NER prompt) extracted from the MuSiQue
paragraphs; ``benchmarks/offline_extractor.py`` measures both, the figures are in
``benchmarks/results/offline_extractor.md``.

Mentions (:func:`find_entities`), sentence by sentence, in this order (an earlier
kind wins where two overlap):

1. **Quoted titles** (“Hello Love”, "Blue Moon", ``Blue Moon'', ‘Blue Moon’) that
   start with a capital or a digit and have at most 12 words: type ``work``.
2. **Dates**: "14 March 1931", "March 14, 1931", "March 1931", "14 March",
   "March 14", decades ("1340s"), centuries ("19th century", "3rd century BC"),
   year ranges ("1899–1942", "2011–12"), years with an era ("500 BC") and bare
   years 1000–2099, as the LLM lists them. A month alone is a date only inside a
   sentence, never as its first word ("May" opens sentences as a verb).
3. **Proper-noun spans**: runs of capitalised words (hyphenated or en-dashed,
   with apostrophes, all-caps and dotted acronyms, initials "J. R. R.", "St."),
   joined through at most two lowercase connectors (of, the, de, la, von, van,
   der, du, da, di, del, y, &, ...) when a capitalised word follows. "for",
   "on" and "upon" connect only after a head noun ("Council for ...", "Institute
   on ...", "Kingston upon ..."), "and" only once and only after an "of"
   ("University of Science and Technology"): as a general connector, "and" fused
   lists ("Britain and France") and cost about 4 points of F1. A possessive "'s" ends
   the span unless a head noun follows ("People's Republic"). A number of up to
   four digits may end a span ("Route 17"). "A B of (the) C D", with two
   capitalised words on each side and no head noun before "of", is two names
   ("Minnesota Wild of the National Hockey League"). Then:

   - at the start of a sentence, leading function words are dropped ("The
     Journal of ...", "In Paris", "During World War II"); anywhere, pronouns,
     prepositions and conjunctions never open or close a name. A capitalised
     "The" inside a sentence stays ("by The Beatles"): the LLM keeps it there
     (45 to 2) and drops it at the start of a sentence (284 to 28);
   - a lone sentence-initial word is dropped when it is a common word, is
     written in lower case elsewhere in the text (or is the plural of such a
     word), ends like an adverb ("-ally", "-ously", ...) or, with six letters or
     more, like a participle ("-ed", "-ing");
   - single letters, generic acronyms (TV, FM, CEO, ...), a lone head noun ("the
     Institute", "the River": a back-reference) and runs of more than five
     capitalised words without a connector (table rows) are no names;
   - honorifics: a style ("Sir", "King", "Queen", "Dr.", "Mr.") stays in the name,
     a role ("Professor", "Mayor", "President", "Governor") is taken out of it, as
     the LLM writes them; either makes the mention a ``person`` and is kept in
     the mention's ``role`` (and the entity's description);
   - a bare year just before an event name joins it ("1924 Summer Olympics"), as
     does one just after ("Eurovision Song Contest 1991"), an ordinal before a
     name ("15th Lok Sabha") and a comma suffix after ("Martin Luther King, Jr.",
     "Washington, D.C.").
4. **Numbers with units**, on by default (``numbers=False`` turns them off):
   amounts of money ("$5 million", "€400,000") and numbers with a unit of measure
   ("6.2 metres", "2,400 square kilometres", "100 kW"); ``counts=True`` adds
   percentages and counts of things ("1,300 workers", "35 stores"). Quantities are
   often the answer to a question, so they are nodes by default, although an LLM
   lists few of them (measured precision against the MuSiQue LLM extraction:
   units 21%, money 31%, counts 14%, percentages 7%; see
   ``benchmarks/results/offline_extractor.md``).

Types come from simple cues: the kinds above (date, number, work), ``person``
(honorific, or initials inside the name), ``organisation`` (University, Company,
Institute, Party, Club, Records, Orchestra, Bank, FC, ...), ``place`` (River,
Lake, Mount, City, County, Island, Street, ...), else ``entity``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from hygraph.extract.keys import display_name, entity_key
from hygraph.extract.schema import (
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Fact,
    Relation,
    Unit,
)
from hygraph.extract.sentences import make_units, split_sentences

__all__ = ["Mention", "OfflineExtractor", "find_entities"]


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity mention: its name as written, a type, and its span in the searched text."""

    name: str
    type: str
    start: int
    end: int
    role: str = ""  # an honorific or role written before a person's name


# --------------------------------------------------------------------------- word lists


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_MONTH_ABBR = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
_MONTH_WORDS = frozenset(_MONTHS.split("|"))

# Lowercase words that may sit inside a name when a capitalised word follows them.
_CONNECTORS = _words(
    "of the de la le les du da di del della von van der den zu y & al el bin ibn for on upon"
)
_HEAD_ONLY = _words("for on upon")  # connect only after a head noun
_MAX_CONNECTORS = 2  # "Games of the XXXIII Olympiad"

# Function words: dropped when they open a sentence-initial span ("In Paris", "The Journal").
_FUNCTION = _words(
    """a an the this that these those there here it its it's he she they we i you his her
    their our my your him them us some any each every all both either neither no not none
    many much more most few several such another only also even just still yet so too very
    quite rather almost already always never often sometimes usually
    in on at by for from with without within into onto upon of off out over under about
    above below between among through throughout during before after since until till
    against toward towards across along around behind beside besides beyond near like unlike
    despite per via
    and or but nor if then than because although though while whereas when whenever where
    wherever whether unless once as however therefore thus hence moreover furthermore
    meanwhile nevertheless nonetheless instead otherwise indeed consequently accordingly
    additionally afterwards afterward later earlier today tomorrow yesterday now currently
    recently formerly originally initially eventually finally subsequently previously
    traditionally generally typically historically officially soon due
    what which who whom whose why how
    is are was were be been being am has have had do does did will would shall should can
    could may might must
    born located based known called named founded formed established built created
    designed written directed produced released published developed considered described
    following according including regarding concerning compared given beginning starting
    having using"""
)
# Lone words that are no entity at the start of a sentence (besides the function words).
_COMMON = _FUNCTION | _words(
    """one ones other same own first second third last next new old early late north south
    east west northern southern eastern western central part parts little mr mrs ms dr prof
    sir st yes chapter section figure table episode season volume two three four five six
    seven eight nine ten eleven twelve"""
)
# Words that never open or close a name anywhere in a sentence.
_NEVER_EDGE = _words(
    """a an this that these those there it its he she they we his her their our my your
    in on at by from with into onto during before after since until although though while
    whereas when where because if however therefore thus also but or nor as despite
    following according including"""
)
_ADVERB_ENDINGS = (
    "ally", "ately", "ously", "ively", "ently", "antly", "ingly", "edly", "fully", "ssly",
    "arly", "ibly", "ably", "mostly", "nearly", "roughly", "only",
)  # fmt: skip
# Acronyms of common nouns and units: no entity alone.
_GENERIC = _words(
    """tv fm am kw mw gw kwh mhz khz ghz erp haat zip cdp gdp gnp ceo cfo coo cto dvd cd lp
    ep mp3 phd ba bsc ma msc mba md pc pm ad bc bce ce km mm cm kg mph hp"""
)

# Styles stay in the name (the LLM writes "King Harold II", "Sir Walter Scott").
_STYLES = _words(
    """mr mrs ms miss mx dr sir dame lord lady king queen prince princess emperor empress
    pope tsar czar sultan shah duke duchess archduke baron baroness count countess earl
    marquess viscount"""
)
# Roles are taken out of the name (the LLM writes "Jeff Colyer" for "Governor Jeff Colyer").
_ROLES = _words(
    """professor prof president mayor governor senator congressman congresswoman
    representative chancellor premier minister secretary ambassador judge justice
    chairman chairwoman chairperson director coach commissioner sheriff bishop archbishop
    cardinal reverend rev rabbi imam father brother sister captain capt colonel col
    lieutenant lt sergeant sgt admiral commander corporal private detective inspector
    officer agent"""
)
_ROLE_MODIFIERS = _words("prime vice deputy chief lord first grand associate assistant")

_ORG_CUES = _words(
    """university college school academy institute institution company corporation corp
    inc ltd llc plc co association party club records council shipyard orchestra bank fc
    society foundation agency department ministry committee commission organization
    organisation group church airlines airways press publishing publishers network league
    federation union army navy corps force forces parliament congress senate board trust
    hospital studios studio entertainment media band choir ensemble team brewery railway
    railways motors industries systems technologies bureau office court cabinet government
    authority service services museum library gallery centre center"""
)
_PLACE_CUES = _words(
    """river lake mount mountain mountains mt city county island islands isle bay coast
    street st road avenue boulevard lane square park valley sea ocean state province
    district village town township borough parish bridge airport station peninsula desert
    forest hill hills falls canyon creek harbour harbor port gulf strait cape beach highway
    route region territory kingdom republic castle palace tower cathedral abbey
    stadium arena reservoir glacier volcano plateau"""
)
# Nouns that head a name continued by "of" / "for" / "on" / a possessive.
_HEAD_CUES = (
    _ORG_CUES
    | _PLACE_CUES
    | _words(
        """house order battle siege treaty act journal history list register war empire duchy
        duke earl count prince princess king queen emperor bishop archbishop archdiocese
        diocese secretary minister president governor mayor member members people peoples
        lord lady prime chief confederation commonwealth states"""
    )
)
# Words that make a name an event, which takes in a year before or after it.
_EVENT_CUES = _words(
    """olympics paralympics games championship championships cup series census election
    elections season festival awards award tour open prix contest congress summit conference
    olympiad expo exposition world league tournament final finals rally marathon draft
    impact"""
)
_ABBREV_DOT = _words("st mt ft dr mr mrs ms jr sr co inc ltd corp bros prof gen capt")
_MAX_RUN = 5  # more capitalised words in a row than this: a table row or a list, not a name

# --------------------------------------------------------------------------- patterns

_UNITS = (
    r"km|kilometres|kilometers|kilometre|kilometer|metres|meters|metre|meter|m|cm|mm|"
    r"miles|mile|mi|feet|foot|ft|inches|inch|yards|yard|yd|acres|acre|hectares|hectare|ha|"
    r"kg|kilograms|kilogram|grams|gram|g|tonnes|tonne|tons|ton|pounds|lb|lbs|ounces|oz|"
    r"litres|liters|litre|liter|gallons|gallon|barrels|"
    r"kW|MW|GW|kWh|MWh|GWh|W|watts|V|volts|hp|horsepower|Hz|kHz|MHz|GHz|FM|AM|"
    r"mph|km/h|knots|°C|°F|degrees|bytes|KB|MB|GB|TB|"
    r"seconds|minutes|hours|days|weeks|months|years|decades|centuries"
)
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = r"(?:\s(?:million|billion|trillion|thousand|hundred))?"
_NUMBERS = re.compile(
    r"(?<![\w.,$€£¥])"
    r"(?:(?P<money>(?:[A-Z]{1,3})?[$€£¥]\s?(?:" + _NUMBER + r")" + _SCALE + r")"
    r"|(?:(?:" + _NUMBER + r")" + _SCALE + r")"
    r"(?:(?P<pct>\s?%|\spercent|\sper\scent)"
    r"|\s(?P<unit>(?:square|cubic)\s[a-z]+|(?:" + _UNITS + r")(?![\w/]))"
    r"|\s(?P<count>[a-z]{3,}s)\b)?)"
    r"(?!\d)"
)

_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_MONTH = r"(?:" + _MONTHS + r"|(?:" + _MONTH_ABBR + r")\.?)"
_YEAR = r"\d{3,4}"
_ERA = r"(?:\s?(?:BCE|BC|AD|CE|B\.C\.|A\.D\.))"
_DATES = re.compile(
    r"(?<![\w,.])(?:"
    r"(?:" + _DAY + r"\s" + _MONTH + r",?\s" + _YEAR + r")"
    r"|(?:" + _MONTH + r"\s" + _DAY + r",?\s" + _YEAR + r")"
    r"|(?:" + _MONTH + r",?\s(?:1\d{3}|20\d{2}))"
    r"|(?:" + _DAY + r"\s" + _MONTH + r")"
    r"|(?:" + _MONTH + r"\s\d{1,2}(?:st|nd|rd|th)?)"
    r"|(?:(?:(?:early|mid|late)[\s-])?\d{1,2}(?:st|nd|rd|th)(?:\s-\s|[\s-])centur(?:y|ies)"
    r"(?:" + _ERA + r")?)"
    r"|(?:\d{1,4}" + _ERA + r")"
    r"|(?:\d{2,3}0s)"
    r"|(?:(?:1\d{3}|20\d{2})\s?[\u2013\u2014-]\s?(?:1\d{3}|20\d{2}|\d{2})(?!\d))"
    r"|(?:1\d{3}|20\d{2})"
    r")(?![\d,.]\d|\w)"
)
_BARE_YEAR = re.compile(r"(?:1\d{3}|20\d{2})")
_YEAR_AFTER = re.compile(r" (?:1\d{3}|20\d{2})(?![\d,.]\d|\w)")
_ORDINAL_BEFORE = re.compile(r"(?<![\w.,])\d{1,3}(?:st|nd|rd|th) $")
_SUFFIX = re.compile(r",\s(?:Jr|Sr|Inc|Ltd|D\.C|II|III|IV)\b\.?")

_QUOTED = re.compile(
    r"\u201c([^\u201c\u201d]{1,120})\u201d"
    r"|(?<![\w\"])\"([^\"]{1,120})\"(?!\w)"
    r"|``([^`']{1,120}?)\s?''"
    r"|(?<!\w)\u2018([^\u2018\u2019]{1,120})\u2019(?!\w)"
)
_QUOTE_CHARS = ('"', "\u201c", "``", "\u2018")
_MAX_TITLE_WORDS = 12

_TOKEN = re.compile(
    r"(?:[^\W\d_]\.){2,}"  # dotted acronyms: U.S., U.K.
    r"|[^\W_](?:[\w'\u2019]*\w)?(?:[-\u2013][^\W_](?:[\w'\u2019]*\w)?)*"  # O'Brien, Colby–Sawyer
    r"|[^\w\s]"  # punctuation, one character
)
_LOWER_WORD = re.compile(r"(?<![\w'\u2019-])[a-z]+(?![\w'\u2019-])")
_LOOSE = re.compile(r"[\W_]+")
_VERBISH = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|became|becomes|become|won|wins|made|makes|"
    r"took|takes|led|leads|held|holds|left|began|begins|wrote|writes|built|bought|sold|gave|"
    r"\w{3,}ed|\w{3,}es)\b"
)
_TITLE_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_LABEL_STRIP = " \t\n,;:()[]{}\"'`\u2018\u2019\u201c\u201d-\u2013\u2014"
_OPENING = frozenset("(\"'`[\u201c\u2018")

_key = lru_cache(maxsize=1 << 16)(entity_key)  # names repeat across chunks

Token = tuple[int, int, str]  # start, end, text


# --------------------------------------------------------------------------- helpers


def _loose(text: str) -> str:
    """A cheap approximate key for substring tests: casefolded words between spaces."""
    return f" {_LOOSE.sub(' ', text.casefold()).strip()} "


def _is_cap(tok: str) -> bool:
    first = tok[0]
    if first.isupper():
        return True
    return first.isalpha() and not tok.islower()  # "iPhone", "al-Qaeda", "eBay"


def _covered(intervals: list[tuple[int, int]], start: int, end: int) -> bool:
    for a, b in intervals:
        if a < end and start < b:
            return True
    return False


def _entity_type(words: list[str]) -> str:
    lowered = [w.casefold().rstrip(".") for w in words]
    for w in (lowered[-1], lowered[0]):
        if w in _ORG_CUES:
            return "organisation"
        if w in _PLACE_CUES:
            return "place"
    for w in lowered[1:-1]:
        if w in _ORG_CUES:
            return "organisation"
    # Initials ("J. R. R. Tolkien", "George T. Solomon") mark a person.
    for w in words[:-1]:
        if len(w) == 2 and w[1] == "." and w[0].isupper():
            return "person"
    return "entity"


def _connects(prev: str, tok: str, span: list[Token]) -> bool:
    """Whether the connector ``tok`` (after the word ``prev``) may continue ``span``."""
    if tok in _HEAD_ONLY:
        return prev.casefold() in _HEAD_CUES
    if tok == "and":
        return any(t[2] == "of" for t in span) and not any(t[2] == "and" for t in span)
    return tok in _CONNECTORS or tok == "-"


# --------------------------------------------------------------------------- mention finding


class _Scanner:
    """Finds mentions sentence by sentence in one text (it knows the text's lowercase words)."""

    __slots__ = ("text", "numbers", "counts", "_lower_words")

    def __init__(self, text: str, *, numbers: bool = False, counts: bool = False) -> None:
        self.text = text
        self.numbers = numbers
        self.counts = counts
        self._lower_words: set[str] | None = None

    def _lower(self) -> set[str]:
        if self._lower_words is None:
            self._lower_words = set(_LOWER_WORD.findall(self.text))
        return self._lower_words

    def sentence(self, start: int, end: int) -> list[Mention]:
        """The mentions in ``text[start:end]``, one sentence, in order of position."""
        sent = self.text[start:end]
        found: list[Mention] = []
        taken: list[tuple[int, int]] = []

        if any(q in sent for q in _QUOTE_CHARS):
            for m in _QUOTED.finditer(sent):
                group = next(i for i in range(1, 5) if m.group(i) is not None)
                inner = m.group(group)
                name = inner.strip().rstrip(",.;:!?").strip()
                if not name or not (name[0].isupper() or name[0].isdigit()):
                    continue
                if len(name.split()) > _MAX_TITLE_WORDS:
                    continue
                a = start + m.start(group) + (len(inner) - len(inner.lstrip()))
                found.append(Mention(name, "work", a, a + len(name)))
                taken.append((start + m.start(), start + m.end()))

        dates: dict[int, Mention] = {}
        for m in _DATES.finditer(sent):
            a, b = start + m.start(), start + m.end()
            if not _covered(taken, a, b):
                mention = Mention(m.group(), "date", a, b)
                found.append(mention)
                dates[a] = mention
                taken.append((a, b))

        self._names(start, end, found, taken, dates)

        if self.numbers:
            wanted = {"money", "unit", "pct", "count"} if self.counts else {"money", "unit"}
            for m in _NUMBERS.finditer(sent):
                if not any(m.group(kind) for kind in wanted):
                    continue
                a, b = start + m.start(), start + m.end()
                if not _covered(taken, a, b):
                    found.append(Mention(m.group(), "number", a, b))
                    taken.append((a, b))

        found.sort(key=lambda x: x.start)
        return found

    def _names(
        self,
        start: int,
        end: int,
        found: list[Mention],
        taken: list[tuple[int, int]],
        dates: dict[int, Mention],
    ) -> None:
        tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(self.text, start, end)]
        n = len(tokens)
        first = 0  # the sentence's first word, after opening quotes or brackets
        while first < n and tokens[first][2] in _OPENING:
            first += 1
        i = 0
        while i < n:
            a, b, tok = tokens[i]
            if not _is_cap(tok) or (taken and _covered(taken, a, b)):
                i += 1
                continue
            span, j = self._grow(tokens, i, taken)
            if span:
                for part in _split_of(span):
                    self._emit(part, i == first and part[0] is span[0], found, taken, dates)
            i = max(j, i + 1)

    def _grow(
        self, tokens: list[Token], i: int, taken: list[tuple[int, int]]
    ) -> tuple[list[Token], int]:
        """The span of a name starting at token ``i``, and the index after it."""
        n = len(tokens)
        span: list[Token] = []
        j = i
        while j < n:
            a, b, tok = tokens[j]
            if taken and _covered(taken, a, b):
                break
            if _is_cap(tok) or (span and tok.isdigit() and len(tok) <= 4):
                if tok.endswith(("'s", "\u2019s")):
                    nxt = tokens[j + 1][2] if j + 1 < n else ""
                    if nxt and _is_cap(nxt) and nxt.casefold() in _HEAD_CUES:
                        span.append((a, b, tok))  # "People's Republic"
                        j += 1
                        continue
                    span.append((a, b - 2, tok[:-2]))  # "Tolkien's" -> "Tolkien"
                    return span, j + 1
                # Initials ("J.") and abbreviations ("St.") keep their dot and go on.
                if (
                    j + 2 < n
                    and tokens[j + 1][2] == "."
                    and tokens[j + 1][0] == b
                    and ((len(tok) == 1 and tok.isupper()) or tok.casefold() in _ABBREV_DOT)
                    and _is_cap(tokens[j + 2][2])
                ):
                    span.append((a, b + 1, tok + "."))
                    j += 2
                    continue
                span.append((a, b, tok))
                j += 1
                if tok[0].isdigit():
                    return span, j  # "Route 17" ends at its number
                continue
            if span and (tok in _CONNECTORS or tok == "-" or tok == "and"):
                k = j
                prev = span[-1][2]
                while k < n and k - j < _MAX_CONNECTORS and _connects(prev, tokens[k][2], span):
                    prev = tokens[k][2]
                    k += 1
                if (
                    k > j
                    and k < n
                    and _is_cap(tokens[k][2])
                    and not (taken and _covered(taken, tokens[k][0], tokens[k][1]))
                ):
                    span.extend(tokens[j:k])
                    j = k
                    continue
            break
        return span, j

    def _emit(
        self,
        span: list[Token],
        initial: bool,
        found: list[Mention],
        taken: list[tuple[int, int]],
        dates: dict[int, Mention],
    ) -> None:
        """Clean a span into a mention (or nothing) and record it."""
        text = self.text
        words = [t[2] for t in span]
        dropped = 0
        while words and (
            (initial and words[0].casefold().rstrip(".") in _FUNCTION)
            or words[0].casefold() in _NEVER_EDGE
            or words[0] in _CONNECTORS
            or words[0] == "-"
            or words[0][0].isdigit()  # "In 3500": a number alone is no name
        ):
            words.pop(0)
            dropped += 1
        span = span[dropped:]
        while words and (
            words[-1] in _CONNECTORS or words[-1] == "-" or words[-1].casefold() in _NEVER_EDGE
        ):
            words.pop()
            span = span[:-1]
        if not words:
            return
        if initial and dropped == 0 and len(words) == 1 and not self._initial_word_ok(words[0]):
            return
        run = best = 0
        for w in words:
            run = 0 if w in _CONNECTORS else run + 1
            best = max(best, run)
        if best > _MAX_RUN:
            return
        role = ""
        k = 0
        while k < len(words) - 1 and words[k].casefold().rstrip(".") in _ROLE_MODIFIERS:
            k += 1
        head = words[k].casefold().rstrip(".")
        if k < len(words) - 1 and _is_cap(words[k + 1]) and words[k + 1] not in _CONNECTORS:
            if head in _ROLES:
                role = " ".join(words[: k + 1])
                span = span[k + 1 :]
                words = words[k + 1 :]
            elif head in _STYLES and k == 0:
                role = words[0]
        etype = "person" if role else ""
        if len(words) == 1:
            w = words[0]
            low = w.casefold()
            if len(w) == 1 or low in _GENERIC:
                return
            if w in _MONTH_WORDS:
                if initial:
                    return
                etype = "date"
            elif low in _COMMON and not w.isupper():
                return
            elif low in _ORG_CUES or low in _PLACE_CUES:
                return
        a, b = span[0][0], span[-1][0] + len(span[-1][2])  # a cut possessive ends early
        etype = etype or _entity_type(words)
        lowered = [w.casefold() for w in words]
        event = any(w in _EVENT_CUES for w in lowered)
        joined = False
        if event and a >= 5 and text[a - 1] == " ":
            for d in list(dates.values()):
                if d.end == a - 1 and _BARE_YEAR.fullmatch(d.name):
                    found.remove(dates.pop(d.start))  # "1924 Summer Olympics"
                    a, joined = d.start, True
                    break
        if not joined and etype != "date":
            m = _ORDINAL_BEFORE.search(text, max(0, a - 6), a)
            if m is not None:
                a = m.start()  # "15th Lok Sabha"
        if event:
            m = _YEAR_AFTER.match(text, b)
            if m is not None and b + 1 in dates:
                found.remove(dates.pop(b + 1))  # "Eurovision Song Contest 1991"
                b = m.end()
        m = _SUFFIX.match(text, b)
        if m is not None:
            b = m.end()  # "Martin Luther King, Jr.", "Washington, D.C."
        found.append(Mention(text[a:b], etype, a, b, role))
        taken.append((a, b))

    def _initial_word_ok(self, word: str) -> bool:
        """Whether a lone capitalised word opening a sentence reads as a name."""
        low = word.casefold()
        if low in _COMMON or low in self._lower():
            return False
        if low.endswith("s") and low[:-1] in self._lower():
            return False  # "Winters are mild" next to "winter"
        if low.endswith(_ADVERB_ENDINGS):
            return False
        return not (len(low) >= 6 and low.endswith(("ed", "ing")))


def _split_of(span: list[Token]) -> list[list[Token]]:
    """Split "A B of (the) C D" into two names when no head noun comes before "of".

    Also split at "and" when what follows it reads as a name of its own: it has an
    "of" or starts with a head noun ("... of Physics and University of Copenhagen").
    """
    for k in range(1, len(span) - 1):
        if span[k][2] == "and":
            right = span[k + 1 :]
            if any(t[2] == "of" for t in right) or right[0][2].casefold() in _HEAD_CUES:
                return [span[:k], *_split_of(right)]
            break
    if len(span) < 5:
        return [span]
    for k in range(2, len(span) - 2):
        if span[k][2] != "of":
            continue
        left = [t for t in span[:k] if t[2] not in _CONNECTORS]
        r = k + 1
        while r < len(span) and span[r][2] in _CONNECTORS:
            r += 1
        right = span[r:]
        if len(left) >= 2 and len(right) >= 2 and left[-1][2].casefold() not in _HEAD_CUES:
            return [span[:k], *_split_of(right)]
    return [span]


def find_entities(text: str, *, numbers: bool = False, counts: bool = False) -> list[Mention]:
    """The entity mentions in ``text`` (a sentence or a passage), in order of position.

    The rules are those of the module docstring; ``numbers`` adds amounts of money
    and numbers with units of measure, ``counts`` also percentages and counts of
    things ("1,300 workers"). Offsets index into ``text``.
    """
    scanner = _Scanner(text, numbers=numbers, counts=counts)
    mentions: list[Mention] = []
    for start, end in split_sentences(text):
        mentions.extend(scanner.sentence(start, end))
    return mentions


# --------------------------------------------------------------------------- the extractor


def _fact_score(n_entities: int, sentence: str) -> float:
    """Completeness 0–10: 2 per member entity (at most 4 count), plus 2 for a verb-like word."""
    return float(min(10, 2 * min(n_entities, 4) + (2 if _VERBISH.search(sentence) else 0)))


def _label(between: str) -> str:
    """The words between two mentions as a relation label, or "related to"."""
    label = " ".join(between.split()).strip(_LABEL_STRIP)
    if not label or len(label.split()) > 8 or not any(ch.isalnum() for ch in label):
        return "related to"
    return label


@dataclass
class OfflineExtractor:
    """Rule-based extraction of the whole :class:`Extraction` schema, one chunk at a time.

    - **entities**: :func:`find_entities` over the chunk's sentences. A chunk that
      starts with its title line (``ChunkInput.title``, or a markdown heading when
      there is no title) gives the title entity (a trailing "(disambiguation)" and
      a ", Region" qualifier are cut), and the line is a sentence of its own; when
      the title does not recur in the body, the title line is also scanned for
      mentions ("Atomic bombings of Hiroshima and Nagasaki" gives Hiroshima and
      Nagasaki too). A short form of a
      name seen earlier in the chunk ("Autry" after "Gene Autry": the first word,
      last word or last two words of a 2–4 word ``person`` or ``entity`` name) is
      read as that name when only one name has that short form. Importance
      (0–100) = ``50 + 10 * (mentions in the chunk - 1)``, ``+ 30`` for the
      title entity, ``+ 10`` if mentioned in the first sentence of the body,
      capped at 100. 50 is the floor because :meth:`Extraction.normalised` gives
      every relation and fact member at least the schema's default score (50).
      A person's honorific or role ("Professor", "Sir") is its description.
    - **relations**: in each sentence, over its distinct entities in order, the
      adjacent pairs and (first, each later one); the label is the text between
      the two mentions (at most 8 words, else "related to"), the description the
      sentence, the weight 1.0.
    - **facts**: each sentence with two or more distinct entities, with its
      members and a completeness score (:func:`_fact_score`: 2 per member, at
      most 8, plus 2 if a verb-like word occurs).
    - **units**: :func:`~hygraph.extract.sentences.make_units` over all sentences.

    ``name`` is "offline" with the default settings; other ``numbers``/``counts``
    settings (see the module docstring) change it ("offline:numbers=false",
    "offline:counts=true"), since they change the output.
    """

    numbers: bool = True
    counts: bool = False
    max_unit_words: int = 60
    name: str = ""
    stats: ExtractionStats = field(default_factory=ExtractionStats)

    def __post_init__(self) -> None:
        if not self.name:
            options = []
            if not self.numbers:
                options.append("numbers=false")
            if self.counts:
                options.append("counts=true")
            self.name = "offline" + (":" + ",".join(options) if options else "")

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        results = []
        for chunk in chunks:
            extraction = self.extract_one(chunk)
            self.stats.count(extraction)
            results.append(extraction)
        return results

    def extract_one(self, chunk: ChunkInput) -> Extraction:
        """The normalised extraction of one chunk (does not touch ``stats``)."""
        text = chunk.text
        spans = split_sentences(text)
        scanner = _Scanner(text, numbers=self.numbers, counts=self.counts)

        title: Mention | None = None
        body = spans
        if spans:
            title = _title_line(text, spans[0], chunk.title)
            if title is not None and len(spans) > 1:
                if _loose(title.name) in _loose(text[spans[1][0] :]):
                    body = spans[1:]
        per_sentence = [(span, scanner.sentence(*span)) for span in body]
        if title is not None and body is spans:
            per_sentence[0][1].insert(0, title)  # the title line was scanned too
        per_sentence = _resolve_short_forms(per_sentence, title)

        entities = self._entities(per_sentence, title, body is not spans)
        relations: list[Relation] = []
        facts: list[Fact] = []
        for (s_start, s_end), mentions in per_sentence:
            distinct: list[Mention] = []
            seen: set[str] = set()
            for m in mentions:
                key = _key(m.name)
                if key and key not in seen:
                    seen.add(key)
                    distinct.append(m)
            if len(distinct) < 2:
                continue
            sentence = " ".join(text[s_start:s_end].split())
            pairs = [(distinct[k], distinct[k + 1]) for k in range(len(distinct) - 1)]
            pairs += [(distinct[0], distinct[k]) for k in range(2, len(distinct))]
            for src, dst in pairs:
                label = _label(text[src.end : dst.start]) if src.end <= dst.start else "related to"
                relations.append(Relation(src.name, dst.name, label, sentence, 1.0))
            facts.append(
                Fact(sentence, [m.name for m in distinct], _fact_score(len(distinct), sentence))
            )

        units = [Unit(u) for u in make_units(text, spans, max_words=self.max_unit_words)]
        return Extraction(
            chunk_id=chunk.id,
            entities=entities,
            relations=relations,
            facts=facts,
            units=units,
            extractor=self.name,
        ).normalised()

    @staticmethod
    def _entities(
        per_sentence: list[tuple[tuple[int, int], list[Mention]]],
        title: Mention | None,
        title_apart: bool,
    ) -> list[Entity]:
        """Entities in order of first mention (the title first), scored as documented."""
        counts: dict[str, int] = {}
        first_body: set[str] = set()
        order: list[Mention] = [title] if title is not None else []
        for idx, (_, mentions) in enumerate(per_sentence):
            for m in mentions:
                if m is title:
                    continue
                key = _key(m.name)
                counts[key] = counts.get(key, 0) + 1
                if idx == (0 if title_apart or title is None else 1):
                    first_body.add(key)
                order.append(m)
        title_key = _key(title.name) if title is not None else None
        entities = []
        for m in order:
            key = _key(m.name)
            if not key:
                continue
            score = 50.0 + 10.0 * (counts.get(key, 1) - 1)
            if key == title_key:
                score += 30.0
            if key in first_body:
                score += 10.0
            entities.append(Entity(m.name, m.type, m.role, min(100.0, score)))
        return entities


def _resolve_short_forms(
    per_sentence: list[tuple[tuple[int, int], list[Mention]]], title: Mention | None
) -> list[tuple[tuple[int, int], list[Mention]]]:
    """Read a short form ("Autry") as the one longer name seen before it ("Gene Autry")."""
    full: dict[str, str | None] = {}
    first_at: dict[str, int] = {}
    candidates = [title] if title is not None else []
    candidates += [m for _, ms in per_sentence for m in ms]
    for m in candidates:
        if m.type not in ("entity", "person"):
            continue
        words = m.name.split()
        if not 2 <= len(words) <= 4 or any(w.islower() for w in words):
            continue
        forms = {words[0], words[-1]}
        if len(words) >= 3:
            forms.add(" ".join(words[-2:]))
        for form in forms:
            key = _key(form)
            if full.get(key, m.name) != m.name:
                full[key] = None  # two names share this short form: leave it alone
            else:
                full[key] = m.name
                first_at.setdefault(key, m.start)
    if not full:
        return per_sentence
    out = []
    for span, mentions in per_sentence:
        resolved = []
        for m in mentions:
            key = _key(m.name)
            target = full.get(key)
            if target is not None and m.type in ("entity", "person") and first_at[key] < m.start:
                m = Mention(target, m.type, m.start, m.end, m.role)
            resolved.append(m)
        out.append((span, resolved))
    return out


def _title_line(text: str, span: tuple[int, int], title: str | None) -> Mention | None:
    """The title entity when the chunk starts with its title line (or a markdown heading)."""
    start, end = span
    line_end = text.find("\n", start)
    if line_end == -1 or text[end:line_end].strip():
        return None  # no body after it, or the first sentence is not the whole line
    line = text[start:end]
    if title is not None:
        if _key(display_name(title)) != _key(line):
            return None
    elif not text[:start].lstrip().startswith("#"):
        return None
    name = _TITLE_PAREN.sub("", line).strip() or line
    head, comma, rest = name.partition(", ")
    if comma and head and rest[:1].isupper():
        name = head  # "West Chicago, Illinois": the topic is the part before the comma
    words = name.split()
    return Mention(name, _entity_type(words) if words else "entity", start, start + len(name))
