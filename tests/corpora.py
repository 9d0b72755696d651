"""Small hand-written corpora shared by several test files."""

from __future__ import annotations

#: Four linked documents about the port town of Harrowby: (title, text) by id.
HARBOUR_DOCS = {
    "harbour": (
        "Harrowby Harbour",
        "Harrowby is a port town on the Grey Sound. Aldercott Shipyard was founded in 1819 by "
        "Josiah Aldercott on the east bank of Harrowby harbour. Aldercott Shipyard built the "
        "research vessel Gannet's Reach in 1938. The harbour is divided by the river into two "
        "basins.",
    ),
    "expedition": (
        "Northern Shelf Expedition",
        "The Northern Shelf Expedition surveyed the sea floor of the Grey Sound in 1948. It was "
        "led by Renna Osk, who commanded Gannet's Reach. Renna Osk was born in Harrowby. The "
        "expedition mapped 2,400 square kilometres of seabed.",
    ),
    "mayor": (
        "Tobiah Quell",
        "Tobiah Quell was a shipwright at Aldercott Shipyard and later Mayor of Harrowby from "
        "1947 to 1959. Tobiah Quell oversaw the rebuilding of the Harrowby harbour walls. Quell "
        "wrote a history of the Harrowby waterfront.",
    ),
    "festival": (
        "Lantern Tide Festival",
        "The Lantern Tide Festival is held in Harrowby each September. Paper lanterns are set "
        "afloat from the Harrowby harbour steps. The festival was first held in 1921 by Oren "
        "Balfry.",
    ),
}
