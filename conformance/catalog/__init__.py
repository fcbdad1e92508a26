"""The suite's data (checklist, tier ladder, vocabulary, waivers, schemas) and the code that loads and checks it."""
