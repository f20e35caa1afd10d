// placeholder until the DDA planning code exists
