"""Values a run passes between deciding and acting: messages, reasons, intents, reports."""
