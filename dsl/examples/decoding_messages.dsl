# Decode three messages: base64, a Caesar shift of 3, and hex.
plain = decode_base64(text=fetch_message(message_id="m1"))
shifted = fetch_message(message_id="m2")
caesar = ""
for i in range(len(shifted)):
    c = shifted[i]
    code = ord(c)
    if code >= 97 and code <= 122:
        caesar += chr((code - 97 - 3) % 26 + 97)
    elif code >= 65 and code <= 90:
        caesar += chr((code - 65 - 3) % 26 + 65)
    else:
        caesar += c
hexed = decode_hex(text=fetch_message(message_id="m3"))
return {"m1": plain, "m2": caesar, "m3": hexed}
