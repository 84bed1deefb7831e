/* placeholder, filled next */
