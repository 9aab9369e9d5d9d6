package tools

// oNoFollow is 0: Windows has no such open flag.
const oNoFollow = 0
