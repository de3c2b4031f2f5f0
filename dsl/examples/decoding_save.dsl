# Decode a message and save it as a note (a write effect).
text = decode_base64(text=fetch_message(message_id="m1"))
words = split(text, " ")
note = save_note(title="decoded m1", body=upper(text))
return {"words": len(words), "note": note}
